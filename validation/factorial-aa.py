#!/usr/bin/env python3
"""How often `bench stack`'s factorial calls an interaction where there is none, on real runs.

Every run of one stored round of validation/engine-gate-check.sh (an interleave's control and
candidate runs: one configuration, nothing changed) is dealt to the four configurations of a
two-change factorial (base, quant=int4, spec=3, both) by rewriting its vars, and
`bench stack --from` judges each round's pool. Any conflict or synergy row is a false one.
With --inject F the combined configuration's decode is slowed by F (each request's TPOT × F,
its E2E by the same decode time): a real interaction of ln F on TPOT, to see what is caught.

  python3 validation/factorial-aa.py BENCH WORK CONDITION [--deal order|shuffle] [--inject F]
  e.g. python3 validation/factorial-aa.py target/release/bench /tmp/tmp.XXXX il-quiet-40

--deal order (the default) deals the runs in start order, so each group of four consecutive
runs holds one run of each configuration (a blocked design: drift cancels in the
interaction); shuffle deals them in a seeded random order. Prints the verdict of every row
of every round, then the tally by metric.
"""
import argparse
import collections
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile

CONFIGS = [
    {"quant": "none", "spec": "off"},
    {"quant": "int4", "spec": "off"},
    {"quant": "none", "spec": "3"},
    {"quant": "int4", "spec": "3"},
]


def rounds(work, cond):
    found = [d for d in glob.glob(f"{work}/{cond}-*") if re.fullmatch(r"\d+", d.rsplit("-", 1)[1])]
    for d in sorted(found, key=lambda p: int(p.rsplit("-", 1)[1])):
        if os.path.exists(d + ".json"):  # a round the check finished
            yield d


def slow_decode(run, factor):
    for r in run["requests"]:
        if r.get("tpot_us") and r.get("e2e_us") and r.get("ttft_us") is not None:
            decode = r["e2e_us"] - r["ttft_us"]
            r["tpot_us"] *= factor
            r["e2e_us"] = int(r["ttft_us"] + decode * factor)


def pool(round_dir, out, deal, inject, seed):
    runs = [json.load(open(f)) for f in glob.glob(f"{round_dir}/cand/*/rep*/run.json")]
    runs.sort(key=lambda r: r["started_at"])
    if deal == "shuffle":
        random.Random(seed).shuffle(runs)
    for i, r in enumerate(runs):
        r["vars"] = dict(CONFIGS[i % 4])
        if inject and i % 4 == 3:
            slow_decode(r, inject)
        os.makedirs(f"{out}/r{i:02d}")
        with open(f"{out}/r{i:02d}/run.json", "w") as f:
            json.dump(r, f)
    return len(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("work")
    ap.add_argument("cond")
    ap.add_argument("--deal", choices=["order", "shuffle"], default="order")
    ap.add_argument("--inject", type=float)
    a = ap.parse_args()
    tally = collections.Counter()
    row = re.compile(r"^  quant=int4 × spec=3\s+(\S+)\s.*\s(CONFLICT|synergy|neutral|inconclusive)")
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k, rd in enumerate(rounds(a.work, a.cond)):
            out = f"{tmp}/{k}"
            runs = pool(rd, out, a.deal, a.inject, k)
            p = subprocess.run(
                [a.bench, "stack", "scenarios/llama-server.toml", "--base", "quant=none,spec=off",
                 "--try", "quant=int4", "--try", "spec=3", "--from", out],
                capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{rd}: bench stack failed ({p.returncode}):\n{p.stderr}")
            verdicts = [m.groups() for m in map(row.match, p.stdout.splitlines()) if m]
            print(f"{os.path.basename(rd)} ({runs} runs): "
                  + " ".join(f"{m}={v.lower()}" for m, v in verdicts))
            tally.update(verdicts)
            n += 1
    rows = sum(tally.values())
    called = sum(c for (m, v), c in tally.items() if v in ("CONFLICT", "synergy"))
    print(f"== {a.cond}, {n} rounds, deal {a.deal}, inject {a.inject or 'none'}: "
          f"{called} of {rows} rows conflict or synergy")
    for (m, v), c in sorted(tally.items()):
        print(f"   {m} {v.lower()}: {c}")


if __name__ == "__main__":
    main()
