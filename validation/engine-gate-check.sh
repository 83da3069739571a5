#!/usr/bin/env bash
# The gate on a real engine, counted. For each condition, ROUNDS independent rounds on
# llama-server (ci/engines/llama-server.sh): a fresh baseline (--repeat $BASE_REPEAT; default bench's, 12),
# then a compare
# (--repeat $REPEAT, default bench's: sequential, runs or interleaved blocks added to a look
# where every gated row is settled, up to --max-repeat), and the verdicts tallied with the
# runs each compare used, why it stopped and how long it took.
#
#   quiet-8 / quiet-40    nothing changed, quiet machine; 8 = scenarios/llama-server.toml,
#                         40 = the same with 40 requests (any -N: N requests a run)
#   busy-8 / busy-40      nothing changed, a CPU hog of our own (one busy loop, bounded by
#                         the round) running through baseline and compare
#   mixed-8 / mixed-40    nothing changed, the baseline recorded on the quiet machine and the
#                         compare run beside the hog: a stored baseline against a busy CI job
#   slow15-8 / slow40-8   a real slowdown: the compare's server held to a CPU quota (cgroup v1
#                         cpu.cfs_quota_us) that makes its decode ≈ 15 % / ≈ 40 % slower, in
#                         10 ms periods (CPU_PERIOD_US; 100 ms periods made the ≈ 15 % one
#                         anything from +2 % to +25 % from one round to the next)
#   il-…                  any of the above with the compare interleaved (--interleave): control
#                         runs of the baseline's configuration alternate with the candidate's
#                         (ABBA), so drift between the arms cancels; the stored baseline (recorded
#                         once per condition) only names the configuration. A slowdown is then
#                         switched per arm with --switch 'validation/cpu-quota.sh PID …'.
#
#   bash validation/engine-gate-check.sh ROUNDS CONDITION…      e.g. bash validation/engine-gate-check.sh 20 quiet-8 busy-8
#   REPEAT=12 bash validation/engine-gate-check.sh 20 il-slow15-8
#   BASE_REPEAT=3 bash validation/engine-gate-check.sh 20 mixed-8     # 3-run baselines
#
# Prints one line per round and a tally per condition: false fails (or detections), how
# often latency and throughput rows were inconclusive, and how often each row was. Not part
# of .ci/run (a round takes 30 s to 3 min); the closing notes quote its tallies. The rounds
# stay on disk (the path is printed first): validation/rejudge.sh judges an interleaved condition's
# stored runs again with another bench binary, to see what a change to the gate does on the
# same data.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?ROUNDS}; shift
BENCH=${BENCH:-target/release/bench}
REPEAT=${REPEAT:-}  # candidate runs (interleaved: blocks) per compare; empty = bench's default
BASE_REPEAT=${BASE_REPEAT:-}  # runs of each round's baseline; empty = bench's default
export CPU_PERIOD_US=${CPU_PERIOD_US:-10000}  # validation/cpu-quota.sh's throttling period
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
bash ci/engines/llama-server.sh build >/dev/null || { echo "gate check: skipped (no llama-server)"; exit 0; }
source ci/engines/suite-lib.sh
port=$(free_port)
pid=$(bash ci/engines/llama-server.sh start "$port") || { echo "gate check: skipped (llama-server did not start)"; exit 0; }
cg=/sys/fs/cgroup/cpu/bench-quota-$pid
hog=""
cleanup() {
  [ -n "$hog" ] && kill "$hog" 2>/dev/null
  if [ -d "$cg" ]; then
    while read -r p; do echo "$p" > /sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null; done < "$cg/cgroup.procs"
    rmdir "$cg" 2>/dev/null
  fi
  bash ci/engines/llama-server.sh stop "$pid"
}
trap cleanup EXIT
work=$(mktemp -d)
echo "gate check: rounds stored under $work (validation/rejudge.sh re-judges them)"
E="--endpoint http://127.0.0.1:$port/v1"

# The server's CPU quota (per 100 ms, applied in CPU_PERIOD_US slices): 90000 ≈ +15 % TPOT,
# 76000 ≈ +40 % here.
quota() { bash validation/cpu-quota.sh "$pid" "$1" || { echo "gate check: no cgroup v1 cpu controller here" >&2; exit 2; }; }
unquota() { [ -d "$cg" ] && bash validation/cpu-quota.sh "$pid" off; }
start_hog() { timeout 3600 python3 -c 'while True: pass' & hog=$!; }
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; wait "$hog" 2>/dev/null; hog=""; }

# verdicts FILE: "rc regressed inconclusive-latency inconclusive-throughput gated-latency"
verdicts() {
  python3 - "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = c["rows"]
lat = [r for r in rows if r["unit"] == "ms" and r["verdict"] != "not_gated"]
reg = [r["metric"] for r in rows if r["verdict"] == "regressed"]
inc_lat = sum(r["verdict"] == "inconclusive" for r in lat)
inc_thr = sum(r["verdict"] == "inconclusive" for r in rows if r["metric"] == "output_throughput")
print(",".join(reg) or "-", inc_lat, len(lat), inc_thr, len(c.get("notes", [])))
PY
}

for cond in "$@"; do
  n=${cond##*-}  # requests a run: 8 is the shipped scenario, any other N a copy with N
  case $n in
    8) S=scenarios/llama-server.toml ;;
    '' | *[!0-9]*) echo "gate check: $cond: end the condition with its requests a run (-8, -40, …)"; exit 2 ;;
    *) S="$work/llama-server-$n.toml"
       sed "s/^requests = 8\$/requests = $n/; s/^name = \"llama-server\"\$/name = \"llama-server-$n\"/" scenarios/llama-server.toml > "$S" ;;
  esac
  q=""
  case $cond in *slow15-*) q=90000 ;; *slow40-*) q=76000 ;; esac
  fails=0; tpot_hits=0; inc_rounds=0; inc_thr=0
  case $cond in
    il-*)
      # One stored baseline names the configuration; every round's control runs are fresh.
      "$BENCH" baseline "$S" $E ${BASE_REPEAT:+--repeat "$BASE_REPEAT"} --var cpu_quota=off --baselines "$work/$cond-b" --out "$work/$cond-base" -q >"$work/$cond.base.txt" 2>&1 \
        || { echo "$cond: baseline failed"; cat "$work/$cond.base.txt"; exit 2; } ;;
  esac
  for i in $(seq 1 "$rounds"); do
    d="$work/$cond-$i"
    case $cond in *busy-*) start_hog ;; esac
    started=$(date +%s)
    case $cond in
      il-*)
        extra=(--interleave --baselines "$work/$cond-b")
        [ -n "$q" ] && extra+=(--var "cpu_quota=$q" --switch "case {arm} in baseline) bash validation/cpu-quota.sh $pid off ;; *) bash validation/cpu-quota.sh $pid $q ;; esac")
        [ -z "$q" ] && extra+=(--var cpu_quota=off)
        ;;
      *)
        "$BENCH" baseline "$S" $E ${BASE_REPEAT:+--repeat "$BASE_REPEAT"} --baselines "$d/b" --out "$d/base" -q >"$d.base.txt" 2>&1 \
          || { echo "$cond round $i: baseline failed"; cat "$d.base.txt"; exit 2; }
        [ -n "$q" ] && quota "$q"
        case $cond in mixed-*) start_hog ;; esac
        started=$(date +%s)
        extra=(--baselines "$d/b")
        ;;
    esac
    [ -n "$REPEAT" ] && extra+=(--repeat "$REPEAT")
    "$BENCH" compare "$S" $E "${extra[@]}" --out "$d/cand" --json "$d.json" -q >"$d.txt" 2>&1
    rc=$?
    secs=$(( $(date +%s) - started ))
    unquota; stop_hog
    [ $rc -le 1 ] || { echo "$cond round $i: error (exit $rc)"; cat "$d.txt"; exit 2; }
    read -r reg inc_l n_l inc_t notes <<<"$(verdicts "$d.json")"
    [ $rc -eq 1 ] && fails=$((fails + 1))
    case ",$reg," in *,tpot.p50,*) tpot_hits=$((tpot_hits + 1)) ;; esac
    [ "$inc_l" -gt 0 ] && inc_rounds=$((inc_rounds + 1))
    [ "$inc_t" -gt 0 ] && inc_thr=$((inc_thr + 1))
    tpot=$(python3 -c "import json; r=[x for x in json.load(open('$d.json'))['rows'] if x['metric']=='tpot.p50'][0]; print('%+.1f%%' % r['delta_pct'])")
    used=$(python3 -c "import json; c=json.load(open('$d.json')); s=c.get('sequence'); print('%s %s' % (s['used'], s['stop']) if s else '%s fixed' % c['candidate_repetitions'])")
    echo "$secs" > "$d.secs"
    echo "$cond round $i: exit $rc, regressed: $reg; tpot.p50 $tpot; inconclusive latency rows $inc_l of $n_l, throughput $inc_t; notes $notes; runs used, stop: $used; ${secs} s"
  done
  echo "== $cond: exit 1 in $fails of $rounds rounds (tpot.p50 regressed in $tpot_hits); rounds with an inconclusive latency row $inc_rounds, inconclusive throughput $inc_thr"
  python3 - "$work" "$cond" <<'PY'
import collections, glob, json, statistics, sys
work, cond = sys.argv[1:]
inc, decided, used, secs, stops, n = collections.Counter(), collections.Counter(), [], [], collections.Counter(), 0
for f in glob.glob(f"{work}/{cond}-[0-9]*.json"):
    n += 1
    c = json.load(open(f))
    for r in c["rows"]:
        if r["verdict"] != "not_gated":
            (inc if r["verdict"] == "inconclusive" else decided)[r["metric"]] += 1
    s = c.get("sequence")
    used.append(s["used"] if s else c["candidate_repetitions"])
    stops[s["stop"] if s else "fixed"] += 1
    secs.append(int(open(f[: -len(".json")] + ".secs").read()))
print(f"== {cond}: rounds in which each row was inconclusive, of {n}: "
      + (", ".join(f"{m} {c}" for m, c in sorted(inc.items())) or "none"))
print(f"== {cond}: rows decided: "
      + ", ".join(f"{m} {decided[m]}/{decided[m] + inc[m]}" for m in sorted(set(decided) | set(inc))))
if used:
    print(f"== {cond}: runs a side (blocks) used: median {statistics.median(used)}, range {min(used)}–{max(used)}; "
          f"stops {dict(stops)}; wall time per compare: median {statistics.median(secs)} s")
PY
done
