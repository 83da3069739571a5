#!/usr/bin/env python3
"""Joins consecutive stored rounds of validation/engine-gate-check.sh's interleaved conditions (il-…)
into rounds with GROUP times the blocks, so that validation/rejudge.sh can show what more blocks would
have done on the same runs without running them again: rounds 1..GROUP become joined round 1,
and so on (a last incomplete group is left out). Each arm's runs keep their start times, so the
joined runs still alternate in ABBA blocks. A joined round is made of the same runs as the
rounds it came from, not new ones: say "joined" wherever its tallies are quoted.

    python3 validation/join-rounds.py WORK CONDITION OUT GROUP
    e.g. python3 validation/join-rounds.py /tmp/tmp.XXXX il-quiet-40 /tmp/j12 2
         bash validation/rejudge.sh target/release/bench /tmp/j12 il-quiet-40
"""
import glob
import os
import shutil
import sys


def main(work, cond, out, group):
    os.makedirs(out, exist_ok=True)
    # The stored baseline names the configuration; the scenario copy is what rejudge runs.
    for name in (f"{cond}-b", f"llama-server-{cond.rsplit('-', 1)[1]}.toml"):
        if os.path.exists(f"{work}/{name}") and not os.path.exists(f"{out}/{name}"):
            os.symlink(os.path.abspath(f"{work}/{name}"), f"{out}/{name}")
    number = lambda d: int(d.rsplit("-", 1)[1])
    rounds = sorted(
        (d for d in glob.glob(f"{work}/{cond}-[0-9]*")
         if d.rsplit("-", 1)[1].isdigit() and os.path.exists(d + ".json")),  # finished rounds
        key=number,
    )
    rep = lambda f: int(f.rsplit("/rep", 1)[1].split("/")[0])  # rep10 after rep9
    joined = 0
    for i in range(0, len(rounds) - group + 1, group):
        joined += 1
        r = f"{out}/{cond}-{joined}"
        for arm in ("control", "candidate"):
            k = 0
            for d in rounds[i:i + group]:
                for f in sorted(glob.glob(f"{d}/cand/{arm}/rep*/run.json"), key=rep):
                    k += 1
                    os.makedirs(f"{r}/cand/{arm}/rep{k}", exist_ok=True)
                    shutil.copy(f, f"{r}/cand/{arm}/rep{k}/run.json")
        open(r + ".json", "w").write("{}")  # rejudge.sh judges rounds that have one
    print(f"{out}: {joined} joined rounds of {cond} ({group} stored rounds each)")


if __name__ == "__main__":
    if len(sys.argv) != 5 or not sys.argv[4].isdigit() or int(sys.argv[4]) < 1:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
