#!/usr/bin/env python3
"""thread_shares.py [--no-py] FINDINGS TRUTH: the native samples of each thread a
workload describes in TRUTH (its own measurements, written by the
workload) against the findings' native.tree (read from
formats/findings.schema.json alone, as tree_paths.py).

TRUTH: {"threads": [{"pid", "tid", "cpu_ns", "whole", "parts": [{"name",
"lib", "ns", optional "py"}]}]}: the thread's own CPU time and, per
planted native function, the CPU time it measured around its calls.  A
sample is a part's when its stack has a native frame of that name (or
matching "name_re"; an unnamed frame's name is library+offset) in a
library whose file name starts with "lib", and,
with "py", under a Python frame of that function name (its qualified
name; --no-py: any Python frame, or none: the checks of the functions
alone, which rest on the native samples only, not on their pairing with
the Python sampler's).

Checks, per thread (each printed; exit 1 when one fails):
  - the thread is in the tree, and nothing was cut from it;
  - "whole": true: the part's share of all the thread's samples is its
    share of the thread's CPU time (ns / cpu_ns); the samples stand for
    the thread's CPU time (samples x period within 25 % of cpu_ns);
  - "whole": false (a thread whose CPU time before and after the
    measured work, e.g. the interpreter's start and end, is not in
    cpu_ns): the parts' shares of the parts' samples are their shares of
    the parts' time;
each within 3 binomial standard errors of the expected share (n the
samples compared) plus 5 points for what the sampling itself cannot
resolve (a call's entry and exit, a period's rounding);
  - a part with "py" and "only_under_py": true (the workload made every
    call of it under that Python function, by construction): at least
    95 % of the samples in it (by native frames alone) are under that
    frame.  The pairing's own error, on the same samples: no sampling
    noise between them, the 5 points again for a call's entry and exit."""
import json
import math
import re
import sys


def main():
    args = [a for a in sys.argv[1:] if a != "--no-py"]
    use_py = "--no-py" not in sys.argv
    doc = json.load(open(args[0], encoding="utf-8"))
    truth = json.load(open(args[1], encoding="utf-8"))
    tree = doc["native"]["tree"]
    period = doc["native"]["sampler"]["period_ns"]
    parent, frame, self_ = tree["parent"], tree["frame"], tree["self"]
    frames = tree["frames"]
    roots = {(t["pid"], t["tid"]): t["root"] for t in tree["threads"]}
    # each node's root and path (frames root first), for nodes with self samples
    paths = {}
    for i, s in enumerate(self_):
        if s == 0 or parent[i] < 0:
            continue
        path, k = [], i
        while parent[k] >= 0:
            path.append(frames[frame[k]])
            k = parent[k]
        paths.setdefault(k, []).append((path[::-1], s))
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("ok " if ok else "FAIL ") + what)
        failed += not ok

    check(tree["elided_samples"] == 0, "no sample cut from the tree (elided %d)" % tree["elided_samples"])
    for th in truth["threads"]:
        key = (th["pid"], th["tid"])
        who = "thread %d/%d" % key
        if key not in roots:
            check(False, who + ": in the tree")
            continue
        stacks = paths.get(roots[key], [])
        n = sum(s for _, s in stacks)
        counts = []
        for part in th["parts"]:
            name_re = re.compile(part.get("name_re") or "^%s$" % re.escape(part["name"]))
            k = k_any = 0
            for path, s in stacks:
                py_ok = not use_py or "py" not in part or any(f["kind"] == "python" and f["name"] == part["py"] for f in path)
                hit = any(
                    f["kind"] in ("native", "unnamed")
                    and name_re.search(f["name"])
                    and (f["file"] or "").rsplit("/", 1)[-1].startswith(part["lib"])
                    for f in path
                )
                k += s if (hit and py_ok) else 0
                k_any += s if hit else 0
            counts.append(k)
            if use_py and part.get("only_under_py") and k_any:
                check(k >= 0.95 * k_any, "%s: %s (%s): %d of its %d samples under %s, %.1f %%, all of them made there (>= 95)" % (
                    who, part.get("name_re") or part["name"], part["lib"], k, k_any, part["py"], 100 * k / k_any))
        if th["whole"]:
            want_n = th["cpu_ns"] / period
            check(abs(n - want_n) <= 0.25 * want_n + 3 * math.sqrt(want_n),
                  "%s: %d samples stand for its %.3f s of CPU (%.0f samples)" % (who, n, th["cpu_ns"] / 1e9, want_n))
            denom_n, denom_ns = n, th["cpu_ns"]
        else:
            denom_n, denom_ns = sum(counts), sum(p["ns"] for p in th["parts"])
        for part, k in zip(th["parts"], counts):
            label = part.get("name_re") or part["name"]
            if denom_n == 0 or denom_ns == 0:
                check(False, "%s: %s: samples to compare (%d) and time (%d ns)" % (who, label, denom_n, denom_ns))
                continue
            p = part["ns"] / denom_ns
            got = k / denom_n
            tol = 3 * math.sqrt(p * (1 - p) / denom_n) + 0.05
            check(abs(got - p) <= tol, "%s: %s (%s%s): %d of %d samples, %.1f %%, measured %.1f %% +- %.1f" % (
                who, label, part["lib"], ", under " + part["py"] if use_py and "py" in part else "", k, denom_n,
                100 * got, 100 * p, 100 * tol))
    print("failed %d" % failed)
    return 1 if failed else 0


sys.exit(main())
