#!/usr/bin/env python3
"""Whether the advice an inconclusive p95-in-a-jump row gives -- "an SLO between the two,
judged as goodput, judges that share directly" -- holds on stored rounds of
validation/engine-gate-check.sh's interleaved conditions: each run's goodput is recomputed from its
requests.csv as if the scenario had had `[slo] tpot_ms = SLO` (requests/s of the run x the
share of its measured ok requests with TPOT <= SLO; the runs themselves were recorded without
an SLO, so bench has no goodput for them), and judged with the gate's rule for a rate in ABBA
pairs: each block's ln(control/candidate) difference, SE = s/sqrt(k), Student's t with k - 1
df, regressed when the effect > max(t(1 - a/m)*SE, floor), ok when t(1 - a/m)*SE <= floor or
effect + t(1 - a)*SE <= floor, else inconclusive; floor = -ln(0.95) (goodput's default -5 %),
a = 0.05, m = 9 (the 8 gated rows with goodput added). Prints the tally.

    python3 validation/goodput-aa.py WORK il-quiet-40 31
"""
import csv
import glob
import json
import math
import os
import statistics
import sys

from scipy import stats


def goodput(run, slo):
    rows = [r for r in csv.DictReader(open(f"{run}/requests.csv")) if r["warmup"] != "true"]
    ok = [r for r in rows if r["outcome"] == "ok" and r["tpot_ms"]]
    good = sum(float(r["tpot_ms"]) <= slo for r in ok)
    rps = json.load(open(f"{run}/run.json"))["summary"]["throughput"]["request_rps"]
    return rps * good / max(len(ok), 1)


def main(work, cond, slo, alpha=0.05, m=9):
    floor = -math.log(0.95)
    tally = {"ok": 0, "inconclusive": 0, "regressed": 0}
    rounds = [g for g in glob.glob(f"{work}/{cond}-[0-9]*") if os.path.isdir(f"{g}/cand/control")]
    for rd in sorted(rounds, key=lambda s: int(s.rsplit("-", 1)[1])):
        reps = sorted(os.listdir(f"{rd}/cand/control"), key=lambda s: int(s[3:]))
        if len(reps) < 2:
            continue
        d = [
            math.log(goodput(f"{rd}/cand/control/{r}", slo) / goodput(f"{rd}/cand/candidate/{r}", slo))
            for r in reps
        ]
        k = len(d)
        effect, se = statistics.mean(d), statistics.stdev(d) / math.sqrt(k)
        critical = stats.t.ppf(1 - alpha / m, k - 1) * se
        bound = effect + stats.t.ppf(1 - alpha, k - 1) * se
        if effect > max(critical, floor):
            v = "regressed"
        elif critical <= floor or bound <= floor:
            v = "ok"
        else:
            v = "inconclusive"
        tally[v] += 1
        print(f"{os.path.basename(rd)}: goodput at tpot_ms = {slo:g}: {effect:+.3f} ± {critical:.3f} {v}")
    print(f"== {cond} ({work}), goodput with [slo] tpot_ms = {slo:g}: {tally}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
