#!/usr/bin/env python3
"""Checks what bench read of the server's own per-request clock in one or more run.json files.

    server-clock-check.py [--min-hit-rate R] [--rest-within MS] RUN.json...

For every successful measured request: the reply carried the server's prefill, and the TTFT
bench timed is at least that prefill (TTFT − prefill ≥ 0). For each run: its own prefix-cache
hit rate in the summary equals Σ cached / Σ prompt tokens summed here from the records, and is
at least R when given; with --rest-within, the median of TTFT − prefill is at most MS beyond
the idle round trip bench measured before the run (GET /v1/models: the network and client).
Prints the medians of prefill and TTFT − prefill, and the idle round trip.
"""
import json
import statistics
import sys


def main(argv):
    min_hit = within = None
    while argv[:1] in (["--min-hit-rate"], ["--rest-within"]):
        if argv[0] == "--min-hit-rate":
            min_hit = float(argv[1])
        else:
            within = float(argv[1])
        argv = argv[2:]
    problems = []
    for path in argv:
        run = json.load(open(path))
        ok = [r for r in run["requests"] if r["outcome"] == "ok" and not r["warmup"]]
        if not ok:
            problems.append(f"{path}: no successful measured request")
            continue
        rest, prefill = [], []
        for r in ok:
            p = (r.get("server") or {}).get("prefill_us")
            if p is None:
                problems.append(f"{path}: request {r['index']} has no server prefill")
                continue
            if r["ttft_us"] < p:
                problems.append(f"{path}: request {r['index']} TTFT {r['ttft_us']} µs < prefill {p} µs")
            rest.append((r["ttft_us"] - p) / 1000)
            prefill.append(p / 1000)
        cached = sum(r.get("cached_tokens", 0) for r in ok if r.get("cached_tokens") is not None)
        prompt = sum(r["prompt_tokens"] for r in ok if r.get("cached_tokens") is not None)
        c = run["summary"]["tokens"].get("cached")
        if c is None:
            problems.append(f"{path}: no hit rate in the summary")
        elif prompt and abs(c["hit_rate"] - cached / prompt) > 1e-12:
            problems.append(f"{path}: hit rate {c['hit_rate']} != {cached}/{prompt}")
        elif min_hit is not None and c["hit_rate"] < min_hit:
            problems.append(f"{path}: hit rate {c['hit_rate']:.3f} < {min_hit}")
        idle = (run.get("idle_round_trip") or {}).get("median_ms")
        if within is not None and idle is None:
            problems.append(f"{path}: no idle round trip in run.json")
        if rest:
            beyond = "" if idle is None else (
                f", idle round trip {idle:.2f} ms: the rest lies {statistics.median(rest) - idle:.2f} ms beyond it"
            )
            print(
                f"{path}: {len(ok)} requests, prefill median {statistics.median(prefill):.2f} ms, "
                f"TTFT − prefill median {statistics.median(rest):.2f} ms (min {min(rest):.2f}, "
                f"max {max(rest):.2f}){beyond}, hit rate {cached}/{prompt}"
            )
            if within is not None and idle is not None and statistics.median(rest) - idle > within:
                problems.append(f"{path}: TTFT − prefill median is more than {within} ms beyond the idle round trip")
    for p in problems:
        print("  " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
