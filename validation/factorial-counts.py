#!/usr/bin/env python3
"""Whether `bench stack`'s "≈ N runs per configuration would settle it" plans with the right
noise on real runs. Each stored 24-run round of validation/engine-gate-check.sh (an interleave's runs:
one configuration, nothing changed) is dealt as validation/factorial-aa.py deals it, then split: its
first 8 runs give a factorial of 2 runs a configuration, its other 16 one of 4. From each row
of the 2-run factorial the half-width at 4 runs is predicted the way bench plans — the SE
shrunk as 1/sqrt(runs), Student's t with the new df — once from the SE as measured and once
from its 80 % upper confidence limit (SE * sqrt(df / chi2_0.2(df)), the rule bench uses; here
applied to the whole SE, which the runs' part dominates in these rows), and set against the
half-width the 4-run factorial of the other runs shows. A ratio (shown / predicted) near 1 in
the median means the count is about right; above 1, too few runs are named.

    python3 validation/factorial-counts.py BENCH WORK [WORK...] [--deal order|shuffle]
    e.g. python3 validation/factorial-counts.py target/release/bench /tmp/tmp.XXXX --deal shuffle
"""
import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile

from scipy import stats

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("factorial_aa", f"{here}/factorial-aa.py")
fa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fa)

ROW = re.compile(
    r"^  quant=int4 × spec=3\s+(\S+)\s.*?[+-]\d\.\d+ \[([+-]\d\.\d+), ([+-]\d\.\d+)\]\s+"
    r"(?:CONFLICT|synergy|neutral|inconclusive)"
)


def half_widths(bench, runs_dir):
    p = subprocess.run(
        [bench, "stack", f"{here}/../scenarios/llama-server.toml", "--base", "quant=none,spec=off",
         "--try", "quant=int4", "--try", "spec=3", "--from", runs_dir],
        capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{runs_dir}: bench stack failed ({p.returncode}):\n{p.stderr}")
    found = (ROW.match(line) for line in p.stdout.splitlines())
    return {m.group(1): (float(m.group(3)) - float(m.group(2))) / 2 for m in found if m}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("work", nargs="+")
    ap.add_argument("--deal", choices=["order", "shuffle"], default="order")
    a = ap.parse_args()
    configs, two, four = 4, 2, 4
    df2, df4 = configs * (two - 1), configs * (four - 1)
    shrink = stats.t.ppf(0.975, df4) / stats.t.ppf(0.975, df2) * (two / four) ** 0.5
    ucl = (df2 / stats.chi2.ppf(0.2, df2)) ** 0.5
    point, planned, rounds = [], [], 0
    for work in a.work:
        for k, rd in enumerate(fa.rounds(work, "il-quiet-40")):
            with tempfile.TemporaryDirectory() as tmp:
                if fa.pool(rd, f"{tmp}/rest", a.deal, None, k) != 24:
                    continue
                os.makedirs(f"{tmp}/first")
                for d in sorted(os.listdir(f"{tmp}/rest"))[: configs * two]:
                    os.rename(f"{tmp}/rest/{d}", f"{tmp}/first/{d}")
                h2, h4 = half_widths(a.bench, f"{tmp}/first"), half_widths(a.bench, f"{tmp}/rest")
            rounds += 1
            for m, h in h2.items():
                point.append(h4[m] / (h * shrink))
                planned.append(h4[m] / (h * shrink * ucl))
    if not point:
        sys.exit("factorial-counts: no 24-run il-quiet-40 round under " + " ".join(a.work))
    q = lambda v: ", ".join(f"{x:.2f}" for x in statistics.quantiles(v, n=4))  # noqa: E731
    print(f"{rounds} rounds, {len(point)} rows, deal {a.deal}: half-width at 4 runs shown / predicted")
    print(f"  from the SE as measured:          quartiles {q(point)}")
    print(f"  from its 80 % upper limit (bench): quartiles {q(planned)}")


if __name__ == "__main__":
    main()
