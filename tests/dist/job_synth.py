#!/usr/bin/env python3
"""Synthetic Kineto rank sets whose job view is known by construction, for
tests/dist/dist.bats and tests/bench/job.sh:

  job_synth.py KIND WORLD STEPS OUTDIR [STRAGGLER [EXTRA_US]]

KIND is one of
  straggler  rank STRAGGLER (default 1) runs one more kernel,
             slow_preprocess_kernel, of EXTRA_US µs (default 2000) before
             each step's all_reduce; the others wait for it there
  balanced   the twin without the extra kernel: every rank arrives within
             JITTER_US of the others (jitter fixed by rank and step)
  comm       communication bound: a short computation, then a long
             all_reduce on every rank, no rank late

Every rank has one process and one GPU (device = rank); with
JOB_SYNTH_SAME_IDS=1 in the environment, every rank's process is pid 4242
on GPU 0, as ranks on different hosts may be (correlation ids always
repeat across ranks: each rank counts from 1001).  Step k of rank r,
in µs on one clock shared by all ranks (each file's clock is its own, as
Kineto writes it; they agree here):

  ProfilerStep#k  [S_k, S_k+1)            on the CPU thread
  gemm_kernel     [S_k + 100, + COMPUTE)  launched by aten::mm
  (straggler)     slow_preprocess_kernel [.., + EXTRA)  by slow_preprocess
  arrival a(r,k)  the end of the above + jitter(r, k)
  all_reduce      ncclKernel_AllReduce_... [a(r,k), E_k), where
                  E_k = max over ranks of a(., k) + TRANSFER
  S_k+1 = E_k + 100

The truth, written to OUTDIR/expected.json before any analysis, follows
from this construction alone: each rank's communication time (the union
of its all_reduce kernels) and window (its first kernel's start to its
last kernel's end; no kernel overlaps another, so exposed communication
is all of it), the straggler, its lateness (its arrival against the
median of the others' arrivals, median over the steps), the time the job
loses to it per step (its arrival less the second latest, when it is the
latest), and whether the job is communication bound (the median rank's
exposed share at least 50 %, no straggler).
"""
import gzip
import json
import os
import statistics
import sys

SAME = os.environ.get("JOB_SYNTH_SAME_IDS") == "1"

JITTER_US = 40
SHAPES = {  # kind: (COMPUTE, TRANSFER) in µs
    "straggler": (8000, 500),
    "balanced": (8000, 500),
    "comm": (3000, 6000),
}
AR_NAME = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
T0 = 1700000000000000  # µs since 1970


def jitter(kind, r, k):
    if kind == "straggler":
        return 0
    return (r * 37 + k * 11) % JITTER_US


def build(kind, world, steps, strag, extra):
    compute, transfer = SHAPES[kind]
    ev = {r: [] for r in range(world)}
    corr = {r: 1000 for r in range(world)}
    truth = {r: {"comm_us": 0, "first": None, "last": None, "late": [], "loss": 0.0} for r in range(world)}
    s = T0

    def kernel(r, name, ts, dur, stream):
        corr[r] += 1
        c = corr[r]
        pid = tid = 4242 if SAME else 1000 + r
        dev = 0 if SAME else r
        ev[r].append({"ph": "X", "cat": "cpu_op", "name": "slow_preprocess" if "slow" in name else
                      ("c10d::allreduce_" if "nccl" in name else "aten::mm"), "pid": pid, "tid": tid,
                      "ts": ts - 20, "dur": 10, "args": {"External id": c}})
        ev[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                      "ts": ts - 18, "dur": 5, "args": {"External id": c, "correlation": c}})
        ev[r].append({"ph": "X", "cat": "kernel", "name": name, "pid": dev, "tid": stream, "ts": ts, "dur": dur,
                      "args": {"External id": c, "device": dev, "stream": stream, "correlation": c,
                               "context": 1}})
        t = truth[r]
        t["first"] = ts if t["first"] is None else min(t["first"], ts)
        t["last"] = ts + dur if t["last"] is None else max(t["last"], ts + dur)

    for k in range(steps):
        arr = {}
        for r in range(world):
            t = s + 100
            kernel(r, "gemm_kernel", t, compute, 7)
            t += compute
            if kind == "straggler" and r == strag:
                kernel(r, "slow_preprocess_kernel", t, extra, 7)
                t += extra
            arr[r] = t + jitter(kind, r, k)
        end = max(arr.values()) + transfer
        for r in range(world):
            kernel(r, AR_NAME, arr[r], end - arr[r], 20)
            truth[r]["comm_us"] += end - arr[r]
            others = [arr[q] for q in range(world) if q != r]
            truth[r]["late"].append(arr[r] - statistics.median(others))
            if arr[r] == max(arr.values()) and sorted(arr.values())[-2] < arr[r]:
                truth[r]["loss"] += arr[r] - sorted(arr.values())[-2]
        for r in range(world):
            p = 4242 if SAME else 1000 + r
            ev[r].append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % k, "pid": p,
                          "tid": p, "ts": s, "dur": end + 100 - s, "args": {"External id": 0}})
        s = end + 100
    return ev, truth


def main():
    kind, world, steps, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    strag = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    extra = int(sys.argv[6]) if len(sys.argv) > 6 else 2000
    ev, truth = build(kind, world, steps, strag, extra)
    os.makedirs(out, exist_ok=True)
    ranks = []
    for r in range(world):
        doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": world},
               "deviceProperties": [{"id": 0 if SAME else r, "name": "Synthetic GPU"}],
               "traceEvents": sorted(ev[r], key=lambda e: e["ts"])}
        with gzip.open(os.path.join(out, "rank%d.json.gz" % r), "wt") as f:
            json.dump(doc, f)
        t = truth[r]
        window = t["last"] - t["first"]
        ranks.append({"rank": r, "comm_ns": t["comm_us"] * 1000, "window_ns": window * 1000,
                      "exposed_comm_pct": round(100 * t["comm_us"] / window, 2),
                      "lateness_ns": int(statistics.median(t["late"]) * 1000),
                      "loss_per_iteration_ns": round(t["loss"] / steps * 1000)})
    med_exposed = statistics.median(x["exposed_comm_pct"] for x in ranks)
    strag_rank = strag if kind == "straggler" else None
    expected = {"kind": kind, "world_size": world, "steps": steps, "straggler": strag_rank,
                "communication_bound": strag_rank is None and med_exposed >= 50,
                "exposed_pct_median": med_exposed, "ranks": ranks}
    if strag_rank is not None:
        expected["cause"] = "slow_preprocess_kernel"
        expected["cause_delta_ns_per_iter"] = extra * 1000
        expected["waiting_ranks"] = [r for r in range(world) if r != strag_rank]
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
