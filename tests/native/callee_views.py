#!/usr/bin/env python3
"""callee_views.py [--off] FINDINGS TRUTH: tests/native/callees.py's
step in the two views of where C time goes, against the CPU times the
workload measured around each call (TRUTH "times": compress, sha256,
exp, step; ns).

  - The callee view (issue 24, python.samples.native_calls): the calls
    of zlib.compress and _hashlib.openssl_sha256 made by step, each's
    share of step's samples (python.samples.functions' total) is its
    measured share of step's time.
  - The CPU split inside the iterations (each step is a scope), of the
    on-CPU time (python_ns + ops_ns): with native stacks (default) the
    torch ops are exp's share and other C code compress's and sha256's
    together, from the native frames' classes; with --off (no native
    stacks) the split has only the callees, and the third call's callee
    is builtins.list, the interpreter's own type, so torch ops are under
    10 % and the interpreter has exp's share: the premise that makes the
    first check the native frames' own (the two views disagree there).

Each share within 3 binomial standard errors (n the samples behind it:
the Python samples of step, or the native samples, about the same count
at the tests' equal rates) plus 5 points.  Prints each check; exit 1
when one fails."""
import json
import math
import sys


def main():
    off = "--off" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--off"]
    doc = json.load(open(args[0], encoding="utf-8"))
    t = json.load(open(args[1], encoding="utf-8"))["times"]
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok " if ok else "FAIL ") + what)
        failed += not ok

    def near(got, want, n, what):
        tol = 3 * math.sqrt(max(want * (1 - want), 0) / n) + 0.05 if n else 0
        check(n > 0 and abs(got - want) <= tol,
              "%s: %.1f %%, measured %.1f %% +- %.1f (n %d)" % (what, 100 * got, 100 * want, 100 * tol, n))

    ps = doc["python"]["samples"]
    step = [f for f in ps["functions"] if f["name"] == "step" and (f["file"] or "").endswith("callees.py")]
    check(len(step) == 1, "one function step of callees.py in the Python samples (%d)" % len(step))
    n = step[0]["total_samples"] if step else 0
    for callee, part in (("zlib.compress", "compress"), ("_hashlib.openssl_sha256", "sha256")):
        rows = [c for c in ps["native_calls"] if c["name"] == callee and c["caller"] and c["caller"]["name"] == "step"]
        k = sum(c["samples"] for c in rows)
        near(k / n if n else 0, t[part] / t["step"], n, "callee view: %s called by step" % callee)
    split = doc["cpu"]["in_iterations"]["split"]
    on = split["python_ns"] + split["ops_ns"]
    # the samples behind the split: the native ones in the iterations, or the Python ones
    n_split = round(on / doc["native"]["sampler"]["period_ns"]) if not off else n
    if off:
        check("native" not in doc, "no native stacks in these findings")
        check(split["torch_ops_ns"] < 0.10 * on,
              "split without native stacks: torch ops %.1f %% < 10 %% (the callee is builtins.list)"
              % (100 * split["torch_ops_ns"] / on))
        near(split["python_ns"] / on, (t["exp"] + t["step"] - t["exp"] - t["compress"] - t["sha256"]) / t["step"],
             n_split, "split without native stacks: the interpreter")
    else:
        near(split["torch_ops_ns"] / on, t["exp"] / t["step"], n_split, "split from native frames: torch ops")
        near(split["other_c_ns"] / on, (t["compress"] + t["sha256"]) / t["step"], n_split,
             "split from native frames: other C code")
    print("failed %d" % failed)
    return 1 if failed else 0


sys.exit(main())
