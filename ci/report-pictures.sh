#!/usr/bin/env bash
# The README's pictures: one page of each kind, made by bench against the embedded simulator
# and photographed by headless Chromium into docs/img/ (1280 px wide, the page's top). Run by
# hand after a change to the pages; not part of .ci/run (the browser test there checks every
# page type instead).
#
#   bash ci/report-pictures.sh            # BENCH=path/to/bench to use another binary
#
# The history picture is of a planted creep: 30 copies of one real compare whose candidate
# TPOT p50 grows 3 % a compare from the 16th on, the baseline re-recorded after each — every
# single compare passed, the history flags the drift where it began.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet
browser=$(command -v chromium || command -v chromium-browser) || { echo "report-pictures: no chromium here" >&2; exit 2; }
# WORK=DIR keeps the pages there and reuses them on the next call (only the pictures again).
if [ -n "${WORK:-}" ]; then w=$WORK; mkdir -p "$w"; else w=$(mktemp -d); trap 'rm -rf "$w"' EXIT; fi
mkdir -p docs/img
# The runs (slow: a minute each for the long ones) once; the pages from them every time.
if ! [ -d "$w/stack" ]; then
  "$BENCH" run scenarios/chat-short.toml --out "$w/run" -q
  "$BENCH" run scenarios/conversation.toml --opt prefix_cache=on --out "$w/conv" -q
  "$BENCH" baseline scenarios/smoke.toml --baselines "$w/b" -q
  "$BENCH" compare scenarios/smoke.toml --baselines "$w/b" --opt bw_eff=0.7 --out "$w/cand" -q >/dev/null || true
  "$BENCH" compare scenarios/smoke.toml --baselines "$w/b" --json "$w/aa.json" -q >/dev/null
  "$BENCH" sweep scenarios/chat-short.toml --rates 2,4,8,16,32 --requests 80 --out "$w/sweep" -q >/dev/null
  "$BENCH" stack scenarios/stack-demo.toml --base quant=none,spec=off --try spec=3 --try quant=int4 \
    --out "$w/stack" -q >/dev/null
fi
"$BENCH" report "$w/run" --out "$w/run.html"
"$BENCH" report "$w/conv" --out "$w/conversation.html"
"$BENCH" report "$w/b/smoke/main.json" --out "$w/baseline.html"
"$BENCH" compare scenarios/smoke.toml --baselines "$w/b" --candidate "$w/cand" --html "$w/compare.html" -q >/dev/null || true
"$BENCH" report "$w/sweep" --out "$w/sweep.html"
"$BENCH" stack scenarios/stack-demo.toml --base quant=none,spec=off --try spec=3 --try quant=int4 \
  --from "$w/stack" --html "$w/stack.html" -q >/dev/null
python3 - "$w/aa.json" "$w/hist" <<'PY'
import copy, datetime, json, os, random, sys
src, out = sys.argv[1], sys.argv[2]
c = json.load(open(src))
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
start = datetime.datetime(2026, 10, 1, 9, 0, tzinfo=datetime.timezone.utc)
prev = {}
for i in range(30):
    d = copy.deepcopy(c)
    d["created_at"] = (start + datetime.timedelta(days=i)).isoformat().replace("+00:00", "Z")
    d["revision"] = "%040x" % rng.getrandbits(160)
    d["baseline_runs"] = ["baseline-%02d" % i]
    d["rows"] = [r for r in d["rows"] if r["unit"] != "%"]
    for r in d["rows"]:
        if r["verdict"] == "not_gated" or not r["candidate"] or not r["baseline"] or r["unit"] == "%":
            continue
        creep = 1.03 ** max(0, i - 14) if r["metric"] in ("tpot.p50", "e2e.p50") else 1.0
        if r["unit"].endswith("/s") and r["metric"] == "output_throughput":
            creep = 1 / (1.03 ** max(0, i - 14) * 0.5 + 0.5)
        v = r["candidate"] * creep * rng.lognormvariate(0, 0.01)
        r["baseline"] = prev.get(r["metric"], r["baseline"])
        r["candidate"] = v
        r["delta_pct"] = (v / r["baseline"] - 1) * 100
        prev[r["metric"]] = v
    json.dump(d, open(os.path.join(out, "compare-%02d.json" % i), "w"))
PY
"$BENCH" history "$w/hist" --html "$w/history.html" >/dev/null || true

for page in run conversation baseline compare sweep stack history; do
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --user-data-dir="$w/profile" \
    --window-size=1280,1500 --screenshot="docs/img/$page.png" "file://$w/$page.html" >/dev/null 2>&1
  echo "docs/img/$page.png"
done
