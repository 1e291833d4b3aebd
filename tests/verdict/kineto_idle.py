#!/usr/bin/python3
"""Where a Kineto trace's GPU idle time goes, computed from the JSON alone
(an independent check of the premises in verdict_kineto.bats).

    kineto_idle.py TRACE.json[.gz] [DEVICE]

Prints "idle_us=N launch_in_idle_us=N launch_share_pct=N" for the device
(default: the one with the most GPU ops): idle is the time inside the span
(first GPU op start to last GPU op end, HTA's span) covered by no GPU op of
the device; launch_in_idle is the part of that idle during which a launch
call (cudaLaunchKernel, cuLaunchKernel, hipLaunchKernel, cudaGraphLaunch,
hipGraphLaunch, cudaMemcpyAsync, hipMemcpyAsync, cudaMemsetAsync,
hipMemsetAsync, the _ptsz variants and hipExtModuleLaunchKernel) of any
host thread was running. Times in µs as written in the trace.
"""
import gzip
import json
import sys
from decimal import Decimal

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel", "cudaGraphLaunch", "hipGraphLaunch",
          "cudaMemcpyAsync", "hipMemcpyAsync", "cudaMemsetAsync", "hipMemsetAsync", "hipExtModuleLaunchKernel")


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def measure(iv):
    return sum(b - a for a, b in iv)


def intersect(xs, ys):
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append([a, b])
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def main(argv):
    path = argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        ev = json.load(f, parse_float=Decimal)["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X" and "dur" in e and "ts" in e]
    gpu = {}
    for e in x:
        if str(e.get("cat", "")).lower() in GPU_CATS:
            dev = (e.get("args") or {}).get("device", e.get("pid"))
            gpu.setdefault(dev, []).append([Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"])])
    dev = argv[2] if len(argv) > 2 else max(gpu, key=lambda d: len(gpu[d]))
    busy = union(gpu[int(dev) if isinstance(dev, str) and dev.isdigit() else dev])
    span = [[busy[0][0], busy[-1][1]]]
    idle = [[busy[k][1], busy[k + 1][0]] for k in range(len(busy) - 1) if busy[k][1] < busy[k + 1][0]]
    launches = union([[Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"])] for e in x
                      if str(e.get("name", "")).startswith(LAUNCH)])
    li = intersect(idle, intersect(launches, span))
    idle_us, li_us = measure(idle), measure(li)
    share = 100 * li_us / idle_us if idle_us else Decimal(0)
    print("idle_us=%.3f launch_in_idle_us=%.3f launch_share_pct=%.1f" % (idle_us, li_us, share))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
