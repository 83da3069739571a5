#!/usr/bin/env python3
"""Checks ci/engine-suite.sh's --reset runs: WORK/plain-{1,2,3} and WORK/reset-{1,2,3}.

Each run's first request (index 0): its cached prompt tokens and TTFT. With --reset, every
run's first request has nothing cached and their TTFTs are within 50 % of each other, and each
run.json records the reset; without, the first run's first request is cold and the later
runs' find the prompt cached (and are faster). The band is this shared 2-core machine's: cold
first requests of the same prompt measured 2.7–4.2 s across runs of one session (spreads of
24 % and 28 % within one suite), where a cached one takes 0.14–0.20 s.
"""
import json
import sys

work = sys.argv[1]


def first(name):
    d = json.load(open(f"{work}/{name}/run.json"))
    r = next(q for q in d["requests"] if q["index"] == 0)
    return r["cached_tokens"], r["ttft_us"] / 1000, d.get("reset")


plain = [first(f"plain-{i}") for i in (1, 2, 3)]
reset = [first(f"reset-{i}") for i in (1, 2, 3)]
for name, rows in (("without --reset", plain), ("with --reset", reset)):
    print(f"{name}: first requests (cached tokens, TTFT ms): "
          + ", ".join(f"({c}, {t:.0f})" for c, t, _ in rows))
problems = []
if plain[0][0] != 0:
    problems.append("the fresh server's first request found a cached prompt")
if not all(c > 0 and t < plain[0][1] for c, t, _ in plain[1:]):
    problems.append("without a reset the later runs' first requests were not served from the cache")
if not all(c == 0 and r is not None and r["how"].startswith("llama.cpp") for c, _, r in reset):
    problems.append("with --reset a run's first request found a cached prompt, or run.json has no reset")
ttfts = [t for _, t, _ in reset]
if max(ttfts) > 1.5 * min(ttfts):
    problems.append(f"with --reset the first requests' TTFTs differ by more than 50 %: {ttfts}")
for p in problems:
    print("  " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
