#!/usr/bin/env python3
"""Writes synthetic findings documents from a real one (the template keeps
every other section schema-valid): its iterations replaced by N steady
iterations of about MS milliseconds with seeded noise, optionally an op
costing OP_MS per iteration, torch threads as a mark.

    synth.py TEMPLATE OUT [--n N] [--ms MS] [--noise PCT] [--seed S]
             [--op NAME:MS] [--threads T]
    synth.py TEMPLATE --series DIR --runs R [--step-at K --step-pct P]
             [--recover-at L] [--outlier-at J --outlier-pct Q] [--noise PCT]
             [--seed S]

Series mode writes DIR/run-0000.json ... with the iteration p50 (the
history's headline) of run i = MS x (1 + noise) x (1 + P/100 from run K on,
until run L when --recover-at is given).
"""
import argparse
import json
import os
import random


def make(tpl, n, ms, noise, rng, ops, threads):
    d = json.loads(json.dumps(tpl))
    it = d["iterations"]
    spans, at, durs = [], 0, []
    for i in range(n + 1):
        dur = int(ms * 1e6 * (3 if i == 0 else 1) * (1 + rng.gauss(0, noise / 100.0)))
        dur = max(dur, 1000)
        spans.append([at, at + dur])
        durs.append(dur)
        at += dur + 1000
    it["count"] = n + 1
    it["samples"] = n
    it["warmup_excluded"] = 1
    it["warmup_spans"] = 1
    it["spans"] = spans
    it.pop("spans_truncated", None)
    steady = sorted(durs[1:])
    def q(p):
        return steady[max(0, min(n - 1, -(-int(p * n * 1000) // 1000) - 1))]
    it["latency_ns"] = {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99),
                        "mean": sum(steady) // n, "min": steady[0], "max": steady[-1]}
    it.pop("latency_ci95_ns", None)
    it.pop("histogram", None)
    it["scopes"] = [{"name": it["name"], "count": n + 1, "total_ns": sum(durs)}]
    top = []
    for name, per in ops:
        top.append({"name": name, "kind": "op", "file": "torch", "line": 0, "calls": n + 1,
                    "self_ns": int(per * 1e6 * (n + 1)), "self_pct": 1})
    d["cpu"]["top_functions_in_scopes"] = top
    d["cpu"]["scoped_ns"] = sum(durs)
    d["marks"] = [{"name": "torch.num_threads", "count": 1, "sum": threads}]
    d["summary"]["wall_ns"] = at
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--ms", type=float, default=100)
    ap.add_argument("--noise", type=float, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--series")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--step-at", type=int, default=-1)
    ap.add_argument("--step-pct", type=float, default=0)
    ap.add_argument("--recover-at", type=int, default=-1)
    ap.add_argument("--outlier-at", type=int, default=-1)
    ap.add_argument("--outlier-pct", type=float, default=0)
    a = ap.parse_args()
    tpl = json.load(open(a.template))
    rng = random.Random(a.seed)
    ops = [(o.rsplit(":", 1)[0], float(o.rsplit(":", 1)[1])) for o in a.op]
    if not a.series:
        json.dump(make(tpl, a.n, a.ms, a.noise, rng, ops, a.threads), open(a.out, "w"))
        return
    os.makedirs(a.series, exist_ok=True)
    for r in range(a.runs):
        ms = a.ms * (1 + rng.gauss(0, a.noise / 100.0))
        if a.step_at >= 0 and r >= a.step_at and not (a.recover_at >= 0 and r >= a.recover_at):
            ms *= 1 + a.step_pct / 100.0
        if r == a.outlier_at:
            ms *= 1 + a.outlier_pct / 100.0
        d = make(tpl, 9, ms, 0.5, rng, ops, a.threads)
        json.dump(d, open(os.path.join(a.series, "run-%04d.json" % r), "w"))


main()
