"""Known calls per iteration, for the overhead compensation test.

    known_calls.py ITERS CALLS OUT.json

Each iteration, inside `with scope("step")`, calls step() once, which calls
leaf() CALLS times: 2 x (CALLS + 1) recorded events per iteration (the
scope's own methods are not recorded; range() is a type, not a recorded C
call).  The workload times every iteration itself with perf_counter_ns
around the scope and writes the minimum and the median, over the
iterations after the first, to OUT.json.  Run plain (no recorder) it gives
the unrecorded latency the analyzer's corrected latency is compared with.
"""
import json
import sys
import time

from inferscope import scope


def leaf(x):
    return x + 1


def step(n):
    s = 0
    for _ in range(n):
        s = leaf(s)
    return s


def main():
    iters, calls, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        with scope("step"):
            step(calls)
        lat.append(time.perf_counter_ns() - t0)
    steady = sorted(lat[1:])
    with open(out, "w") as f:
        json.dump({"min_ns": steady[0], "median_ns": steady[len(steady) // 2], "iterations": iters,
                   "calls": calls, "latencies_ns": lat}, f)


main()
