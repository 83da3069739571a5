#!/usr/bin/env python3
"""Where the noise of validation/engine-gate-check.sh's stored interleaved rounds (il-…) comes from:
per metric (TTFT, TPOT and E2E medians), the median over rounds of
  * within: one run's sampling noise, the bootstrap sd of ln(its median), 200 resamples;
  * runs:   the sd of ln(run median) over a round's runs, both arms together (an A/A);
  * lag-1:  the autocorrelation of consecutive runs' ln medians in start order (drift > 0);
  * blocks: the sd of each ABBA block's candidate − control ln-median difference, what the
            gate's paired SE is made of, and the block correlation it implies,
            ρ = 1 − blocks² / (2 · runs²).
When runs ≫ within, more requests a run cannot help and more blocks can; when ρ is high,
pairing cancels most of it. Prints each round's TPOT medians in start order (c = control,
k = candidate), then the table. Seeded, so a rerun prints the same.

    python3 validation/run-spread.py WORK CONDITION     e.g. python3 validation/run-spread.py /tmp/tmp.XXXX il-quiet-40
"""
import glob
import json
import math
import random
import statistics as st
import sys

METRICS = ("ttft", "tpot", "e2e")


def ok_requests(run):
    return [q for q in run["requests"] if not q["warmup"] and q["outcome"] == "ok"]


def main(work, cond):
    rng = random.Random(1)
    number = lambda d: int(d.rsplit("-", 1)[1])
    rounds = sorted(
        (d for d in glob.glob(f"{work}/{cond}-[0-9]*") if d.rsplit("-", 1)[1].isdigit()),
        key=number,
    )
    per = {m: {"within": [], "runs": [], "lag1": [], "blocks": []} for m in METRICS}
    for d in rounds:
        runs = sorted(
            ((json.load(open(f)), "c" if arm == "control" else "k")
             for arm in ("control", "candidate")
             for f in glob.glob(f"{d}/cand/{arm}/rep*/run.json")),
            key=lambda x: x[0]["started_at"],
        )
        if len(runs) < 4 or len(runs) % 2:
            continue
        print(d.rsplit("/", 1)[1], " ".join(
            f"{a}{st.median(q['tpot_us'] for q in ok_requests(r)) / 1e3:.1f}" for r, a in runs))
        for m in METRICS:
            values = [[q[f"{m}_us"] for q in ok_requests(r)] for r, _ in runs]
            x = [math.log(st.median(v)) for v in values]
            per[m]["within"].append(st.median(
                st.stdev(math.log(st.median(rng.choices(v, k=len(v)))) for _ in range(200))
                for v in values))
            per[m]["runs"].append(st.stdev(x))
            mu = st.mean(x)
            den = sum((v - mu) ** 2 for v in x)
            per[m]["lag1"].append(
                sum((x[i] - mu) * (x[i + 1] - mu) for i in range(len(x) - 1)) / den if den else 0.0)
            diffs = []
            for i in range(0, len(runs), 2):
                (a, b) = (i, i + 1) if runs[i][1] == "c" else (i + 1, i)
                if runs[a][1] != "c" or runs[b][1] != "k":
                    break  # not ABBA blocks
                diffs.append(x[b] - x[a])
            if len(diffs) == len(runs) // 2:
                per[m]["blocks"].append(st.stdev(diffs))
    print(f"{cond}, {len(per['tpot']['runs'])} rounds: medians over rounds (sd of ln, ≈ fraction)")
    print("metric  within   runs  lag-1  blocks  ρ(blocks)")
    for m in METRICS:
        p = {k: st.median(v) if v else float("nan") for k, v in per[m].items()}
        rho = 1 - p["blocks"] ** 2 / (2 * p["runs"] ** 2)
        print(f"{m:6} {p['within']:7.3f} {p['runs']:6.3f} {p['lag1']:6.2f} {p['blocks']:7.3f} {rho:9.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
