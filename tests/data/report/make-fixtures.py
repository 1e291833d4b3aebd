#!/usr/bin/env python3
"""Writes the hand-made findings documents of tests/data/report (see README.md).

    python3 tests/data/report/make-fixtures.py [DIR]

Deterministic (no clock, no random module): the same files every run.
"""
import copy
import json
import math
import os
import sys

MS = 1_000_000
S = 1_000_000_000
H1 = "<script>alert(1)</script>"
H2 = "<img src=x onerror=alert(1)>"


def full(h1, h2):
    bucket = 64 * MS
    n = 188  # 188 x 64 ms = 12.03 s
    # 2 warm-up iterations, then 38 steady ones of about 250 ms
    spans = [[500 * MS, 900 * MS], [900 * MS, 1300 * MS]]
    t = 1400 * MS
    lat = []
    for i in range(38):
        d = 231 * MS + ((i * 37) % 23) * 2 * MS + (181 * MS if i == 17 else 0)
        spans.append([t, t + d])
        lat.append(d)
        t += d + 20 * MS
    lat_sorted = sorted(lat)
    lo, hi = lat_sorted[0], lat_sorted[-1]
    edges = [lo + (hi - lo) * k // 20 for k in range(21)]
    counts = [0] * 20
    for d in lat:
        counts[min(19, (d - lo) * 20 // (hi - lo))] += 1

    def at(i):
        return i * bucket + bucket // 2

    def steady(i):
        return at(i) >= 1400 * MS

    cpu = [round(1.0 + 0.05 * (i % 3), 3) if not steady(i) else round(1.5 + 0.4 * math.sin(i / 3), 3) for i in range(n)]
    cpu[20] = cpu[21] = None  # buckets without samples
    runnable = [round(c * 1.4, 2) if c is not None else None for c in cpu]
    rss = [200 * 2**20 + i * 5 * 2**20 for i in range(n)]
    busy = [0.0 if not steady(i) else round(60 + 25 * math.sin(i / 2), 1) for i in range(n)]
    util = [None if i % 2 else round(b * 0.9, 1) for i, b in enumerate(busy)]
    gmem = [2 * 2**30 + min(i, 100) * 10 * 2**20 for i in range(n)]

    def finding(fid, sev, conf, title, metrics, ranges, top, action, rationale, estimate, ns, pct):
        return {"id": fid, "title": title, "severity": sev, "confidence": conf,
                "evidence": {"metrics": metrics, "time_ranges": ranges, "top": top},
                "suggestion": {"action": action, "rationale": rationale, "estimate": estimate,
                               "estimated_saving_ns": ns, "estimated_saving_pct": pct}}

    return {
        "schema_version": 2,
        "tool": {"name": "iscope-analyze", "version": "0.0-fixture"},
        "summary": {"start_ns": 0, "wall_ns": 12 * S, "events": 1234567, "dropped_events": 0,
                    "traced_threads": 3, "end_reason": "exited"},
        "environment": {"host": "fixture-host", "cmdline": "python3 infer.py", "ncpu": 4, "sample_hz": 100},
        "iterations": {
            "name": "step", "count": 40, "warmup_excluded": 2, "samples": 38,
            "latency_ns": {"p50": lat_sorted[18], "p90": lat_sorted[34], "p99": lat_sorted[37],
                           "mean": sum(lat) // 38, "min": lo, "max": hi},
            "spans": spans, "spans_truncated": False, "warmup_spans": 2,
            "histogram": {"edges_ns": edges, "counts": counts},
            "dataloader": None,
        },
        "timeseries": {"t0_ns": 0, "bucket_ns": bucket, "buckets": n, "ncpu": 4,
                       "cpu_cores": cpu, "runnable_threads": runnable, "rss_bytes": rss,
                       "gpu_busy_pct": busy, "gpu_util_pct": util, "gpu_mem_used_bytes": gmem},
        "cpu": {
            "split": {"traced_ns": 30 * S, "python_ns": 12.96 * S, "python_pct": 43.2, "ops_ns": 9.45 * S,
                      "ops_pct": 31.5, "off_cpu_ns": 7.59 * S, "off_cpu_pct": 25.3, "off_cpu_measured": True,
                      "voluntary_switches": 100, "involuntary_switches": 20},
            "top_functions": [
                {"name": h1, "kind": "python", "file": "model.py", "line": 42, "calls": 38,
                 "self_ns": 5 * S, "total_ns": 9 * S, "self_pct": 16.7},
                {"name": h2, "kind": "op", "file": "", "line": 0, "calls": 1520,
                 "self_ns": 3 * S, "total_ns": 3 * S, "self_pct": 10.0},
            ],
        },
        "memory": {"rss_peak_bytes": rss[-1], "rss_growth_bytes_per_s": 78 * 2**20,
                   "major_faults": 3, "minor_faults": 120000},
        "gpu": {
            "devices": [{"id": 0, "name": "Test GPU", "ops": 15200,
                         "temporal_breakdown": {"span_ns": 10.3 * S, "idle_ns": 4.13 * S, "compute_ns": 5.39 * S,
                                                "non_compute_ns": 0.78 * S, "idle_pct": 40.1, "compute_pct": 52.3,
                                                "non_compute_pct": 7.6},
                         "streams": []}],
            "kernels": {"count": 15200, "distinct": 2, "total_ns": 5 * S, "top_pct": 100,
                        "top": [{"name": h2, "count": 15200, "total_ns": 5 * S, "mean_ns": 329000,
                                 "min_ns": 4000, "max_ns": 900000, "pct": 100}]},
        },
        "verdict": {"class": "launch_bound", "confidence": 0.82,
                    "sentence": "71 % of the kernels run for less than 10 µs and the GPU waits on their launches "
                                "40 % of the step.",
                    "explained_pct": 73.0, "evidence_quality": 0.9, "finding": "launch_bound"},
        "findings": [
            finding("launch_bound", "critical", 0.82,
                    "71 % of the kernels run under 10 µs: the GPU waits for launches",
                    {"kernels_under_10us_pct": 71.2, "launches": 15200, "launch_delay_p50_ns": 12000},
                    [{"start_ns": 1400 * MS, "end_ns": 1650 * MS, "label": "iteration 3, GPU idle 98 ms"}],
                    [{"name": h2, "kind": "kernel", "value_ns": 2 * S, "pct": 40.0},
                     {"name": h1, "file": "model.py", "line": 42, "kind": "python", "value_ns": 900 * MS,
                      "pct": 18.0, "detail": "launches 40 % of the kernels"}],
                    "Capture the step in a CUDA graph (torch.cuda.graphs) or fuse the small kernels with "
                    "torch.compile.",
                    "Each launch costs about 12 µs on the host; 15200 launches a run.",
                    "The host-wait idle time inside the iterations removed.", 1.9 * S, 18.7),
            finding("python_hot", "warning", 0.64, h1 + " holds the interpreter 31 % of the step",
                    {"self_pct": 31.0, "self_ns": 5 * S}, [],
                    [{"name": h1, "file": "model.py", "line": 42, "kind": "python", "value_ns": 5 * S, "pct": 31.0}],
                    "Replace the per-element Python loop with batched torch operations.",
                    "Interpreter self time is 31 % of the step.",
                    "Half the self time of the function removed.", 780 * MS, 7.7),
            finding("rss_growth", "warning", 0.9, "Resident memory grows by 78.0 MiB/s after warm-up",
                    {"rss_growth_bytes_per_s": 78 * 2**20, "rss_peak_bytes": rss[-1]}, [], [],
                    "Look for tensors kept across iterations.", "RSS grows steadily in the steady state.",
                    "No time saving: memory.", None, None),
            finding("dataloader", "info", 0.5, "The DataLoader takes 6 % of a step",
                    {"pct_of_step": 6.1, "calls": 40}, [], [],
                    "Use num_workers > 0 and pin_memory=True.", "Loading runs on the main thread.",
                    "Loading overlapped with the step.", 120 * MS, 1.2),
        ],
    }


def old_shape():
    """Schema 1, as iscope-analyze wrote it before the rule engine (findings.c)."""
    return {
        "schema_version": 1,
        "tool": {"name": "iscope-analyze", "version": "0.1"},
        "summary": {"wall_ns": 2 * S, "events": 1000, "dropped_events": 0},
        "cpu": {"split": {"traced_ns": 2 * S, "python_pct": 80.0, "ops_pct": 15.0, "off_cpu_pct": 5.0,
                          "off_cpu_measured": True},
                "top_functions": [{"name": "crunch", "kind": "python", "file": "hot.py", "line": 12,
                                   "self_pct": 61.0, "self_ns": 1.2 * S, "calls": 10}]},
        "verdict": {"class": "python_bound", "confidence": 0.8,
                    "sentence": "80 % of traced CPU time is Python interpreter time."},
        "findings": [{"id": "hot_python_function", "severity": "warning",
                      "title": "crunch (hot.py:12) spends 61 % of traced time in the Python interpreter",
                      "suggestion": "Replace the per-element Python work in this function with batched torch "
                                    "operations.",
                      "estimated_saving_pct": 61.0,
                      "evidence": {"self_ns": 1200000000, "calls": 10, "function": "crunch"}}],
    }


def native(h1, h2, f1):
    """full() with native stacks (h1: a Python function, h2: a worker
    thread and a native function, f1: a file) and a comparison with them:
    the flame graph and the differential, their tables."""
    doc = full(h1, h2)
    ms10 = 10 * MS
    frames = [{"kind": "python", "name": "<module>", "file": "run.py", "line": 3},
              {"kind": "python", "name": h1, "file": f1, "line": 12},
              {"kind": "op", "name": "aten::addmm", "file": None, "line": 0},
              {"kind": "native", "name": h2 + "_sgemm", "file": "/usr/lib/libopenblas.so.0", "line": 0},
              {"kind": "kernel", "name": "clear_page_erms", "file": "[kernel]", "line": 0},
              {"kind": "native", "name": "start_thread", "file": "/lib/x86_64-linux-gnu/libc.so.6", "line": 0},
              {"kind": "other", "name": "[other]", "file": None, "line": 0}]
    # main thread: 60 samples, 48 in the kernel under h1; worker: 40, 38 of them dispatched by h1
    parent = [-1, 0, 1, 2, 3, 2, -1, 6, 7, 8, 9, 6]
    frame = [-1, 0, 1, 3, 4, 6, -1, 0, 1, 2, 3, 5]
    self_ = [0, 0, 5, 48, 2, 5, 0, 0, 0, 0, 38, 2]
    total = [60, 60, 60, 50, 2, 5, 40, 38, 38, 38, 38, 2]
    where = {"name": h1, "file": f1, "line": 12}
    row = {"name": h2 + "_sgemm", "library": "/usr/lib/libopenblas.so.0", "samples": 86, "pct": 86}
    ctx = {"op": "aten::addmm", "python": where, "samples": 38, "pct": 95}
    doc["native"] = {
        "sampler": {"event": "cpu-clock", "period_ns": ms10, "hz": 100, "stack_bytes": 32768, "kernel_stacks": True},
        "samples": 100, "lost_records": 0, "sampled_cpu_ns": 100 * ms10, "process_cpu_ns": 1020 * MS,
        "cpu_covered_pct": 98.04, "python_stacks": 60, "paired_pct": 100, "interpreter_samples": 5,
        "worker_samples": 40, "dispatched_samples": 38, "dispatched_pct": 95,
        "unwind": {"frames": 200, "unnamed_frames": 4, "unnamed_pct": 2, "jit_frames": 0, "jit_pct": 0,
                   "kernel_frames": 2, "truncated_stacks": 0, "truncated_pct": 0, "no_user_samples": 0,
                   "files_missing": 0, "files_changed": 0,
                   "unnamed_by_library": [{"library": "/usr/lib/libtorch_cpu.so", "frames": 4, "pct": 100}]},
        "functions": [{"name": h2 + "_sgemm", "library": "/usr/lib/libopenblas.so.0", "kind": "native",
                       "self_samples": 86, "total_samples": 88, "self_ns": 86 * ms10, "total_ns": 88 * ms10,
                       "self_pct": 86, "total_pct": 88,
                       "above": [{"op": None, "python": where, "samples": 50, "pct": 56.82}, ctx]}],
        "op_samples": 38,
        "ops": [{"name": "aten::addmm", "samples": 38, "ns": 38 * ms10, "pct": 38, "python": where,
                 "kernels": [dict(row, samples=38, pct=100)], "inner_ops": []}],
        "threads": [{"pid": 100, "tid": 100, "name": "MainThread", "python": True, "samples": 60, "ns": 60 * ms10,
                     "dispatched_samples": 0, "top": [dict(row, samples=48, pct=80)], "dispatched_by": []},
                    {"pid": 100, "tid": 101, "name": h2, "python": False, "samples": 40, "ns": 40 * ms10,
                     "dispatched_samples": 38, "top": [dict(row, samples=38, pct=95)], "dispatched_by": [ctx]}],
        "tree": {"max_nodes": 4096, "min_total_samples": 3, "elided_samples": 5, "frames": frames,
                 "threads": [{"pid": 100, "tid": 100, "name": "MainThread", "root": 0},
                             {"pid": 100, "tid": 101, "name": h2, "root": 6}],
                 "parent": parent, "frame": frame, "self": self_, "total": total}}
    doc["comparison"] = {"native": {"baselines": 1, "rule": "fixture",
                                    "node_delta_pct": [0, 0, 12.5, 10, -0.5, 2, 0, 0, 12.5, -8, -8, 0],
                                    "functions": [{"name": h2 + "_sgemm", "library": "/usr/lib/libopenblas.so.0",
                                                   "self_pct": 86, "base_self_pct": 90, "delta_pct": -4}]}}
    return doc


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    docs = {"full.json": full(H1, H2), "benign.json": full("forward", "gemm_kernel"), "old-shape.json": old_shape(),
            "native.json": native(H1, H2, "a\"b'c<d>&e.py"),
            "native-benign.json": native("forward", "gemm_kernel", "model.py")}
    for name, doc in docs.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
