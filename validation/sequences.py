#!/usr/bin/env python3
"""Deals the stored ABBA blocks of validation/engine-gate-check.sh's interleaved conditions (il-…)
into sequences of the default cap (12 blocks) with the default sequential design beside them, so
that validation/rejudge.sh replays each look by look as a live compare would — one that was not
stopped where its round was. Every finished round's blocks are pooled in time order (its control
and candidate runs paired by start order), OFFSET blocks are skipped, and each consecutive 12
become one sequence (a last incomplete one is left out). The sequences are made of runs measured
in the rounds, not new ones: say "dealt from stored rounds" wherever their tallies are quoted.

    python3 validation/sequences.py WORK CONDITION OUT [OFFSET]
    e.g. python3 validation/sequences.py /tmp/tmp.XXXX il-busy-40 /tmp/s0
         bash validation/rejudge.sh target/release/bench /tmp/s0 il-busy-40

The design is bench's own default, asked of it (`bench compare SCENARIO --plan --json`, against
the condition's stored baseline): BENCH names the binary (default target/release/bench).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

CAP = 12


def default_design(work, cond):
    """The sequential design `bench compare` uses with its default flags, as bench writes it."""
    n = cond.rsplit("-", 1)[1]
    scenario = "scenarios/llama-server.toml" if n == "8" else f"{work}/llama-server-{n}.toml"
    bench = os.environ.get("BENCH", "target/release/bench")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.json")
        subprocess.run([bench, "compare", scenario, "--baselines", f"{work}/{cond}-b", "--plan",
                        "--json", out, "-q"], check=True, stdout=subprocess.DEVNULL)
        design = json.load(open(out))["design"]
    assert design["looks"][-1] == CAP, f"bench's default cap is {design['looks'][-1]}, not {CAP}"
    return design


def main(work, cond, out, offset):
    os.makedirs(out, exist_ok=True)
    for name in (f"{cond}-b", f"llama-server-{cond.rsplit('-', 1)[1]}.toml"):
        if os.path.exists(f"{work}/{name}") and not os.path.exists(f"{out}/{name}"):
            os.symlink(os.path.abspath(f"{work}/{name}"), f"{out}/{name}")
    blocks = []
    for d in glob.glob(f"{work}/{cond}-[0-9]*"):
        if not d.rsplit("-", 1)[1].isdigit() or not os.path.exists(d + ".json"):
            continue  # not a round, or one the check did not finish
        arms = []
        for arm in ("control", "candidate"):
            runs = [(json.load(open(f))["started_at"], f)
                    for f in glob.glob(f"{d}/cand/{arm}/rep*/run.json")]
            arms.append(sorted(runs))
        for (tc, c), (tk, k) in zip(*arms):
            blocks.append((min(tc, tk), c, k))
    blocks.sort()
    blocks = blocks[offset:]
    design = default_design(work, cond)
    made = 0
    while len(blocks) >= CAP:
        made += 1
        seq, blocks = blocks[:CAP], blocks[CAP:]
        r = f"{out}/{cond}-{made}"
        for i, (_, c, k) in enumerate(seq, 1):
            for arm, f in (("control", c), ("candidate", k)):
                os.makedirs(f"{r}/cand/{arm}/rep{i}", exist_ok=True)
                shutil.copy(f, f"{r}/cand/{arm}/rep{i}/run.json")
        json.dump(design, open(f"{r}/cand/candidate/sequence.json", "w"))
        open(r + ".json", "w").write("{}")  # rejudge.sh judges rounds that have one
    print(f"{out}: {made} sequences of {CAP} blocks of {cond}")


if __name__ == "__main__":
    ok = len(sys.argv) in (4, 5) and (len(sys.argv) == 4 or sys.argv[4].isdigit())
    if not ok:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 0)
