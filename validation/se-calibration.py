#!/usr/bin/env python3
"""Whether the gate's standard errors are the right size on a real engine: over nothing-changed
rounds, each row's effect / SE should spread like Student's t with the row's degrees of freedom
(variance df / (df - 2)); a variance well above that means the noise model is too narrow and
false fails will exceed alpha, well below that it is wider than it needs to be. Reads the
comparison JSONs that validation/rejudge.sh keeps with SAVE=DIR (A/A conditions only: a slowdown's
effect is not noise). With R rounds the variance itself is uncertain by about sqrt(2/R).

It also prints what needs no noise model at all: how far the effect itself spread over the
rounds (its SD, and in how many rounds it moved by more than 5 % and 10 % either way). With
nothing changed, a row whose effect moves past the threshold in several rounds cannot be
judged "no regression of the threshold" in most rounds by any test that keeps false fails at
alpha: those rounds look exactly like a regression.

    SAVE=/tmp/aa bash validation/rejudge.sh target/release/bench WORK il-busy-40
    python3 validation/se-calibration.py /tmp/aa [DIR...]
"""
import glob
import json
import math
import statistics
import sys
from collections import defaultdict


def main(dirs):
    z, dfs, eff = defaultdict(list), defaultdict(list), defaultdict(list)
    for d in dirs:
        for f in sorted(glob.glob(f"{d}/*.json")):
            for r in json.load(open(f))["rows"]:
                # Error rate is judged exactly, not by an SE; a row without one says nothing.
                if r["verdict"] == "not_gated" or r["metric"] == "error_rate" or not r["se"]:
                    continue
                z[r["metric"]].append(r["effect"] / r["se"])
                eff[r["metric"]].append(r["effect"])
                dfs[r["metric"]].append(r.get("df") or float("inf"))
    if not z:
        sys.exit("se-calibration: no comparison JSON with gated rows under " + " ".join(dirs))
    print(f"{'metric':18} rounds  var(effect/SE)  t expects  |z|>2  sd(effect)  |effect|>5%  >10%")
    for m, v in z.items():
        df = statistics.median(dfs[m])
        expect = df / (df - 2) if df > 2 else float("nan")
        var = sum(x * x for x in v) / len(v)  # about 0 under A/A: the spread around zero
        e = eff[m]
        sd = statistics.stdev(e) if len(e) > 1 else float("nan")
        past = lambda r: sum(abs(x) > math.log(r) for x in e)  # noqa: E731
        print(
            f"{m:18} {len(v):6}  {var:14.2f}  {expect:9.2f}  {sum(abs(x) > 2 for x in v):5}"
            f"  {sd:9.3f}  {past(1.05):11}  {past(1.10):4}"
        )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
