#!/usr/bin/env bash
# Re-judges the stored rounds of validation/engine-gate-check.sh with a given bench binary, to see
# what a change to the gate does to verdicts on the same runs: each round's runs are judged
# again with `bench compare --control DIR --candidate DIR` against the condition's stored
# baseline (interleaved conditions, il-…), or `bench compare --candidate DIR` against the
# round's own (the others). A sequential compare is replayed look by look up to the runs the
# round made, so a change that would have run it longer shows only as where it stopped. Prints one line per round (every gated row's
# verdict) and a tally: rounds with a regressed row, with an inconclusive latency row, with an
# inconclusive throughput row.
#
#   bash validation/rejudge.sh BENCH WORK CONDITION
#   e.g. bash validation/rejudge.sh target/release/bench /tmp/tmp.XXXX il-quiet-40
#        bash validation/rejudge.sh /tmp/old-bench /tmp/tmp.XXXX il-slow15-8
# (A binary from before d9e09a6 has no --control: judge with the script of its commit.)
# WORK is the directory engine-gate-check.sh printed ("rounds stored under …"), or one that
# validation/join-rounds.py made from it (consecutive rounds joined into rounds with more blocks).
# EXTRA="--alpha 0.01" passes more options to bench compare; SAVE=DIR keeps each round's
# comparison JSON there as WORK-ROUND.json (validation/se-calibration.py reads them), so the rounds of
# several WORK directories of one condition can share a DIR.
set -euo pipefail
bench=${1:?BENCH}; work=${2:?WORK}; cond=${3:?CONDITION}
n=${cond##*-}  # requests a run, as engine-gate-check.sh names its conditions
case $n in 8) scenario=scenarios/llama-server.toml ;; *) scenario="$work/llama-server-$n.toml" ;; esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rounds=0; failed=0; tpot=0; inc_lat=0; inc_thr=0
for round in $(ls -d "$work/$cond"-[0-9]* | grep -E -- "-[0-9]+$" | sort -V); do
  [ -f "$round.json" ] || continue  # a round the check did not finish
  rm -f "$tmp/c.json"; rc=0  # a compare that errs must not leave the last round's verdicts to be read
  if [ -d "$round/cand/control" ]; then  # interleaved: the condition's one stored baseline
    arms=(--control "$round/cand/control" --candidate "$round/cand/candidate" --baselines "$work/$cond-b")
  else  # the candidate's runs against the round's own stored baseline
    arms=(--candidate "$round/cand" --baselines "$round/b")
  fi
  "$bench" compare "$scenario" "${arms[@]}" --json "$tmp/c.json" ${EXTRA:-} -q >"$tmp/out.txt" 2>&1 || rc=$?
  [ "${rc:-0}" -le 1 ] && [ -f "$tmp/c.json" ] || { echo "$(basename "$round"): compare failed:" >&2; cat "$tmp/out.txt" >&2; exit 2; }
  [ -n "${SAVE:-}" ] && mkdir -p "$SAVE" && cp "$tmp/c.json" "$SAVE/$(basename "$work")-$(basename "$round").json"
  line=$(python3 -c "import json; c=json.load(open('$tmp/c.json')); print(' '.join(r['metric'] + '=' + r['verdict'] for r in c['rows'] if r['verdict'] != 'not_gated'))")
  seq=$(python3 -c "import json; s=json.load(open('$tmp/c.json')).get('sequence'); print(f\"[{s['used']} a side, {s['stop']}] \" if s else '')")
  echo "$(basename "$round"): $seq$line"
  rounds=$((rounds + 1))
  case " $line" in *=regressed*) failed=$((failed + 1)) ;; esac
  case " $line" in *" tpot.p50=regressed"*) tpot=$((tpot + 1)) ;; esac
  lat=0; for row in $line; do case $row in *.p[0-9]*=inconclusive) lat=1 ;; esac; done
  inc_lat=$((inc_lat + lat))
  case " $line " in *" output_throughput=inconclusive "*) inc_thr=$((inc_thr + 1)) ;; esac
done
echo "== $cond with $bench: a row regressed in $failed of $rounds rounds (tpot.p50 in $tpot); rounds with an inconclusive latency row $inc_lat, with inconclusive output throughput $inc_thr"
