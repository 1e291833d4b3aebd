#!/usr/bin/python3
"""GPU analysis accuracy on the real Kineto traces of tests/data/real/kineto (TAP).

For every trace in the directory:
  * iscope-merge imports it, iscope-analyze analyzes it in the default
    (exact) mode and with --hta-compat: both exit 0 with sane output;
  * the exact mode equals, to the nanosecond, the computation in this file
    (exact_gpu below): an independent implementation of the definitions in
    iscope-analyze(1) that reads the JSON with json/gzip and Decimal times.
For every trace in the README's reference table (HTA's numbers):
  * --hta-compat matches span, idle/compute/non-compute %, the idle
    breakdown by stream and the launch statistics: exactly where the file
    has whole-µs times, within 2 percentage points (of the span, for times)
    where HTA's rounding of ns times changes the result.

Environment: ISC_BUILD (meson build root), ISC_SRC (source root).
ISC_KINETO_DIR overrides the trace directory.
"""
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal

SRC = os.environ.get("ISC_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ISC_BUILD", os.path.join(SRC, "build"))
DATA = os.environ.get("ISC_KINETO_DIR", os.path.join(SRC, "tests", "data", "real", "kineto"))
MERGE = os.path.join(BUILD, "tools", "iscope-merge", "iscope-merge")
ANALYZE = os.path.join(BUILD, "tools", "iscope-analyze", "iscope-analyze")

# ---- TAP -------------------------------------------------------------------
n_tests = 0
n_failed = 0


def ok(cond, desc, diag=None):
    """One TAP line. A false cond fails the run: no automatic TODO."""
    global n_tests, n_failed
    n_tests += 1
    print("%sok %d - %s" % ("" if cond else "not ", n_tests, desc))
    if not cond and diag:
        for d in str(diag).splitlines():
            print("#   " + d)
    if not cond:
        n_failed += 1
    sys.stdout.flush()
    return cond


def note(msg):
    for d in msg.splitlines():
        print("# " + d)


# ---- the README's reference table ------------------------------------------
def reference_table(path):
    """{file: {...}} from the markdown table under 'Reference numbers'."""
    rows = {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    part = text.split("## Reference numbers", 1)
    if len(part) < 2:
        return rows
    for line in part[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 10 or not cells[0].endswith((".json", ".json.gz")):
            continue
        streams = {}
        for m in re.finditer(r"s(\d+):\s*(\d+)\s*/\s*(\d+)\s*/\s*(\d+)", cells[5]):
            streams[int(m.group(1))] = tuple(int(m.group(i)) for i in (2, 3, 4))
        rows[cells[0]] = {
            "span_us": int(cells[1]), "idle_pct": float(cells[2]), "compute_pct": float(cells[3]),
            "non_compute_pct": float(cells[4]), "streams": streams, "launches": int(cells[6]),
            "shorter": int(cells[7]), "delay_over_100us": int(cells[8]), "median_delay_us": float(cells[9]),
        }
    return rows


# ---- exact recomputation (the default mode's definitions) -------------------
LAUNCH = ["cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaMemcpyAsync",
          "cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
          "cuLaunchCooperativeKernelMultiDevice", "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
          "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync"]
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
            "memset": "memset", "cuda_sync": "sync"}
API_CATS = {"cuda_runtime", "runtime", "hip_runtime", "cuda_driver", "driver", "hip_driver"}


def is_launch(name):
    return any(name == n or name.startswith(n + "_") for n in LAUNCH)


def ns(v):
    return int(Decimal(v) * 1000)


def int_arg(v):
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return None
    return int(v) if isinstance(v, (int, Decimal)) and Decimal(v) == int(v) else None


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def whole_us(events):
    """True when every GPU op and runtime call has whole-µs ts and dur."""
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in set(GPU_CATS) | API_CATS:
            for k in ("ts", "dur"):
                v = e.get(k)
                if isinstance(v, Decimal) and v != v.to_integral_value():
                    return False
    return True


def union(iv):
    """Busy length and span of intervals (s, e) (as lib/analyze/gpu_busy.c: groups by start)."""
    iv.sort()
    busy, cur = 0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            if cur:
                busy += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    busy += cur[1] - cur[0] if cur else 0
    return busy, (cur[1] - iv[0][0]) if iv else 0


def pct(part, whole):
    return math.floor(10000.0 * part / whole + 0.5) / 100 if whole else 0


def median_lin(xs, p):
    xs = sorted(xs)
    h = (len(xs) - 1) * p
    lo = int(math.floor(h))
    if lo + 1 >= len(xs):
        return float(xs[-1])
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def exact_gpu(events):
    """The default mode's gpu.* numbers, per device and stream, in ns."""
    ops, apis = [], {}
    for e in events:
        if e.get("ph") != "X" or "ts" not in e or "dur" not in e:
            continue
        cat = str(e.get("cat", "")).lower()
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        corr = int_arg(args.get("correlation", 0)) or 0
        ts = ns(e["ts"])
        end = ts + ns(e["dur"])
        if cat in API_CATS:
            if corr:
                apis[corr] = (ts, end, str(e.get("name", "")))
            continue
        kind = GPU_CATS.get(cat)
        if not kind:
            continue
        dev = int_arg(args.get("device"))
        if dev is None or dev < 0:
            dev = int_arg(e.get("pid")) or 0
        st = int_arg(args.get("stream"))
        if st is None or st < 0:
            st = int_arg(e.get("tid")) or 0
        ops.append({"kind": kind, "name": str(e.get("name", "")), "ts": ts, "end": end, "dev": dev,
                    "stream": st, "corr": corr})
    out = {"devices": {}, "launch": None}
    work = [o for o in ops if o["kind"] != "sync"]
    for dev in sorted({o["dev"] for o in work}):
        dops = [o for o in work if o["dev"] == dev]
        busy, span = union([(o["ts"], o["end"]) for o in dops])
        comp_ops = [(o["ts"], o["end"]) for o in dops if o["kind"] == "kernel" and "nccl" not in o["name"].lower()
                    and "Memcpy" not in o["name"] and "Memset" not in o["name"]]
        comp, _ = union(comp_ops)
        streams = {}
        for st in sorted({o["stream"] for o in dops}):
            sops = sorted((o for o in dops if o["stream"] == st), key=lambda o: o["ts"])
            hw = kw = other = 0
            prev = None
            for o in sops:
                if prev is not None:
                    gap = o["ts"] - prev
                    api = apis.get(o["corr"])
                    if api and api[0] > prev:
                        hw += gap
                    elif gap < 30000:
                        kw += gap
                    else:
                        other += gap
                prev = o["end"]
            streams[st] = (hw, kw, other)
        out["devices"][dev] = {"span_ns": span, "idle_ns": span - busy, "compute_ns": comp,
                               "non_compute_ns": busy - comp, "idle_pct": pct(span - busy, span),
                               "compute_pct": pct(comp, span), "non_compute_pct": pct(busy - comp, span),
                               "streams": streams}
    pairs = [(apis[o["corr"]], o) for o in work if o["corr"] in apis and is_launch(apis[o["corr"]][2])]
    delays = [max(0, o["ts"] - a[1]) for a, o in pairs]
    out["launch"] = {
        "launches": len(pairs),
        "gpu_op_shorter_than_launch": sum(1 for a, o in pairs if o["end"] - o["ts"] < a[1] - a[0]),
        "launch_call_over_50us": sum(1 for a, o in pairs if a[1] - a[0] > 50000),
        "delay_over_100us": sum(1 for d in delays if d > 100000),
        "short_kernels_under_10us": sum(1 for o in work if o["kind"] == "kernel" and o["end"] - o["ts"] < 10000),
        "p50": median_lin(delays, 0.5) if delays else None,
        "p90": median_lin(delays, 0.9) if delays else None,
        "max": max(delays) if delays else None,
    }
    return out


# ---- running the tools ------------------------------------------------------
def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


VALIDATE = os.path.join(SRC, "tests", "lib", "validate_findings.py")
to_validate = []


def analyze(tl, hta):
    out_path = tl + (".hta" if hta else "") + ".json"
    rc, _, err = run([ANALYZE, "--quiet"] + (["--hta-compat"] if hta else []) + ["-o", out_path, tl])
    try:
        with open(out_path, encoding="utf-8") as f:
            doc = json.load(f)
        to_validate.append(out_path)
    except (OSError, ValueError):
        doc = None
    return rc, doc, err


def sane(gpu, label, exact):
    """Structural checks every analysis must pass."""
    errs = []
    for d in gpu.get("devices", []):
        t = d["temporal_breakdown"]
        if t["idle_ns"] + t["compute_ns"] + t["non_compute_ns"] != t["span_ns"]:
            errs.append("device %s: idle + compute + non_compute != span" % d["id"])
        if t["span_ns"] > 0 and abs(t["idle_pct"] + t["compute_pct"] + t["non_compute_pct"] - 100) > 0.03:
            errs.append("device %s: percentages do not add up to 100" % d["id"])
        if exact and min(t["idle_ns"], t["compute_ns"], t["non_compute_ns"]) < 0:
            errs.append("device %s: a negative time in exact mode" % d["id"])
        for s in d["streams"]:
            b = s["idle_breakdown"]
            if exact and min(b.values()) < 0:
                errs.append("stream %s: a negative idle time in exact mode" % s["id"])
    lc = gpu.get("launch", {})
    if lc.get("launches", 0) > gpu.get("ops", 0):
        errs.append("more launches than ops")
    if not isinstance(gpu.get("step_rule"), str) or not gpu["step_rule"]:
        errs.append("no step_rule")
    ok(not errs, "%s: sane gpu section" % label, "\n".join(errs))


def close(a, b, tol):
    return a is not None and b is not None and abs(a - b) <= tol + 1e-9


def check_exact(name, gpu, want):
    devs = {d["id"]: d for d in gpu["devices"]}
    errs = []
    if sorted(devs) != sorted(want["devices"]):
        errs.append("devices %s, expected %s" % (sorted(devs), sorted(want["devices"])))
    for dev, w in want["devices"].items():
        d = devs.get(dev)
        if not d:
            continue
        t = d["temporal_breakdown"]
        for k in ("span_ns", "idle_ns", "compute_ns", "non_compute_ns"):
            if t[k] != w[k]:
                errs.append("device %d %s = %s, expected %s" % (dev, k, t[k], w[k]))
        for k in ("idle_pct", "compute_pct", "non_compute_pct"):
            if not close(t[k], w[k], 0.006):
                errs.append("device %d %s = %s, expected %s" % (dev, k, t[k], w[k]))
        got = {s["id"]: tuple(s["idle_breakdown"][k] for k in ("host_wait_ns", "kernel_wait_ns", "other_ns"))
               for s in d["streams"]}
        if got != w["streams"]:
            errs.append("device %d idle breakdown %s, expected %s" % (dev, got, w["streams"]))
    lc, wl = gpu["launch"], want["launch"]
    for k in ("launches", "gpu_op_shorter_than_launch", "launch_call_over_50us", "delay_over_100us",
              "short_kernels_under_10us"):
        if lc[k] != wl[k]:
            errs.append("launch.%s = %s, expected %s" % (k, lc[k], wl[k]))
    for k in ("p50", "p90", "max"):
        g = lc["delay_ns"][k]
        if (g is None) != (wl[k] is None) or (g is not None and not close(g, wl[k], 0.001)):
            errs.append("launch.delay_ns.%s = %s, expected %s" % (k, g, wl[k]))
    ok(not errs, "%s: exact mode equals the ns recomputation" % name, "\n".join(errs))


def check_hta(name, gpu, ref, exact_us, events):
    """--hta-compat against HTA's row; returns the numbers compared, for the summary."""
    devs = gpu["devices"]
    errs = []
    if len(devs) != 1:
        ok(False, "%s: --hta-compat matches HTA's reference" % name, "expected one device, got %d" % len(devs))
        return None
    d = devs[0]
    t = d["temporal_breakdown"]
    span_us = t["span_ns"] / 1000
    pct_tol = 0.0051 if exact_us else 2.0
    us_tol = 0 if exact_us else 0.02 * ref["span_us"]
    if not close(span_us, ref["span_us"], us_tol):
        errs.append("span %s µs, HTA %s" % (span_us, ref["span_us"]))
    for k in ("idle_pct", "compute_pct", "non_compute_pct"):
        if not close(t[k], ref[k], pct_tol):
            errs.append("%s %s, HTA %s" % (k, t[k], ref[k]))
    got = {s["id"]: tuple(s["idle_breakdown"][k] / 1000 for k in ("host_wait_ns", "kernel_wait_ns", "other_ns"))
           for s in d["streams"]}
    if sorted(got) != sorted(ref["streams"]):
        errs.append("streams %s, HTA %s" % (sorted(got), sorted(ref["streams"])))
    for s, w in ref["streams"].items():
        g = got.get(s)
        if g and not all(close(a, b, us_tol) for a, b in zip(g, w)):
            errs.append("stream %d idle breakdown %s µs, HTA %s" % (s, g, w))
    lc = gpu["launch"]
    cnt_tol = 0 if exact_us else 0.02 * ref["launches"]
    for k, rk in (("launches", "launches"), ("gpu_op_shorter_than_launch", "shorter"),
                  ("delay_over_100us", "delay_over_100us")):
        if not close(lc[k], ref[rk], cnt_tol):
            errs.append("launch.%s %s, HTA %s" % (k, lc[k], ref[rk]))
    med = lc["delay_ns"]["p50"]
    if not close(None if med is None else med / 1000, ref["median_delay_us"], 0 if exact_us else 1):
        errs.append("median launch delay %s µs, HTA %s" % (None if med is None else med / 1000,
                                                          ref["median_delay_us"]))
    # The importer must tell a stream given as -1 (no stream: HTA leaves the op out) from one
    # given as 4294967295 (counted).  Without ISC_GPU_FLAG_NO_STREAM they look the same: say so.
    neg = sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "cuda_sync"
              and isinstance(e.get("args"), dict) and int_arg(e["args"].get("stream")) is not None
              and int_arg(e["args"]["stream"]) < 0)
    if errs and neg and d["ops"] == hta_op_count(events, with_negative=True):
        errs.append("the %d cuda_sync ops with stream -1 were counted: the importer did not flag them "
                    "ISC_GPU_FLAG_NO_STREAM" % neg)
    ok(not errs, "%s: --hta-compat matches HTA's reference (%s)" % (name, "exact" if exact_us else "±2 points"),
       "\n".join(errs))
    return {"span_us": span_us, "idle_pct": t["idle_pct"], "compute_pct": t["compute_pct"],
            "non_compute_pct": t["non_compute_pct"], "streams": got, "launches": lc["launches"],
            "shorter": lc["gpu_op_shorter_than_launch"], "delay_over_100us": lc["delay_over_100us"],
            "median_delay_us": None if med is None else med / 1000}


def hta_op_count(events, with_negative):
    """GPU ops HTA's way: kernels, memcpy, memset, cuda_sync with a stream (all of them when with_negative)."""
    n = 0
    for e in events:
        if e.get("ph") != "X" or str(e.get("cat", "")).lower() not in GPU_CATS:
            continue
        st = int_arg((e.get("args") or {}).get("stream"))
        if with_negative or st is None or st >= 0:
            n += 1
    return n


def main():
    readme = os.path.join(DATA, "README.md")
    if not os.path.isdir(DATA) or not os.path.exists(readme):
        print("1..1\nnot ok 1 - the trace directory %s (tests/data/real) with its README" % DATA)
        return 1
    traces = sorted(f for f in os.listdir(DATA) if f.endswith((".json", ".json.gz")))
    refs = reference_table(readme)
    tmp = tempfile.mkdtemp(prefix="isc-accuracy-")
    ok(len(refs) >= 1 and all(r in traces for r in refs), "README reference table parsed (%d rows)" % len(refs),
       "rows: %s" % sorted(refs))
    summary = []
    for name in traces:
        path = os.path.join(DATA, name)
        tl = os.path.join(tmp, name + ".istl")
        rc, _, err = run([MERGE, path, "-o", tl])
        if not ok(rc == 0, "%s: iscope-merge imports it" % name, err):
            continue
        events = load(path)
        rc, doc, err = analyze(tl, False)
        if not ok(rc == 0 and doc and "gpu" in doc, "%s: iscope-analyze exits 0 with a gpu section" % name, err):
            continue
        sane(doc["gpu"], name, True)
        check_exact(name, doc["gpu"], exact_gpu(events))
        rc, hdoc, err = analyze(tl, True)
        if not ok(rc == 0 and hdoc and hdoc.get("gpu", {}).get("mode") == "hta-compat",
                  "%s: iscope-analyze --hta-compat exits 0" % name, err):
            continue
        sane(hdoc["gpu"], name + " --hta-compat", False)
        if name in refs:
            got = check_hta(name, hdoc["gpu"], refs[name], whole_us(events), events)
            summary.append((name, got, refs[name]))
    note("ours (--hta-compat) vs HTA:")
    for name, got, ref in summary:
        if got:
            note("%s: span %s/%s µs, idle %s/%s %%, compute %s/%s %%, non-compute %s/%s %%, launches %s/%s, "
                 "shorter %s/%s, delay>100µs %s/%s, median delay %s/%s µs" % (
                     name, got["span_us"], ref["span_us"], got["idle_pct"], ref["idle_pct"], got["compute_pct"],
                     ref["compute_pct"], got["non_compute_pct"], ref["non_compute_pct"], got["launches"],
                     ref["launches"], got["shorter"], ref["shorter"], got["delay_over_100us"],
                     ref["delay_over_100us"], got["median_delay_us"], ref["median_delay_us"]))
    rc, out, _ = run([VALIDATE] + to_validate) if to_validate else (1, "", "")
    ok(rc == 0 and to_validate, "every findings document (%d) is valid against formats/findings.schema.json"
       % len(to_validate), out)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("1..%d" % n_tests)
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
