#!/usr/bin/env python3
"""check_tree.py SMALL.json FULL.json: SMALL's native.tree is FULL's run
bounded (iscope-analyze --native-nodes): at most max_nodes nodes, parents
before children, self counts adding up to native.samples, the [other]
nodes holding elided_samples, every other node with at least
min_total_samples through it, and each kept node with the same samples as
the node of the same frame path in FULL (the bound cuts, it never
recounts).  FULL must have been written without a cut.  Prints what is
wrong and exits 1; "ok" otherwise."""
import json
import sys


def paths(tree):
    """node -> (thread root, frame path) key, and its total."""
    fr, out = tree["frames"], {}
    keys = []
    for i, p in enumerate(tree["parent"]):
        if p < 0:
            keys.append(("root", i))
        else:
            f = fr[tree["frame"][i]]
            keys.append(keys[p] + ((f["kind"], f["name"], f["file"], f["line"]),))
    return keys


def main():
    small = json.load(open(sys.argv[1], encoding="utf-8"))
    full = json.load(open(sys.argv[2], encoding="utf-8"))
    t, u = small["native"]["tree"], full["native"]["tree"]
    bad = []
    n = len(t["parent"])
    if full["native"]["tree"]["min_total_samples"] != 0:
        bad.append("FULL was cut")
    if n > t["max_nodes"]:
        bad.append("%d nodes, max_nodes %d" % (n, t["max_nodes"]))
    if any(p >= i for i, p in enumerate(t["parent"])):
        bad.append("a parent after its child")
    if sum(t["self"]) != small["native"]["samples"]:
        bad.append("self adds up to %d, samples %d" % (sum(t["self"]), small["native"]["samples"]))
    other = [i for i in range(n) if t["frame"][i] >= 0 and t["frames"][t["frame"][i]]["kind"] == "other"]
    if sum(t["self"][i] for i in other) != t["elided_samples"] or not other:
        bad.append("[other] nodes hold %d, elided_samples %d" % (sum(t["self"][i] for i in other), t["elided_samples"]))
    low = [i for i in range(n) if t["parent"][i] >= 0 and i not in other and t["total"][i] < t["min_total_samples"]]
    if low:
        bad.append("%d kept nodes under min_total_samples" % len(low))
    # totals of kept nodes against the full tree, by thread and path
    ks, ku = paths(t), paths(u)
    root_of = {}
    for th in t["threads"]:
        root_of[th["root"]] = (th["pid"], th["tid"])
    uroot = {}
    for th in u["threads"]:
        uroot[th["root"]] = (th["pid"], th["tid"])
    ft = {}
    for i, k in enumerate(ku):
        ft[(uroot.get(k[1]),) + k[2:]] = u["total"][i]
    for i, k in enumerate(ks):
        if i in other:
            continue
        key = (root_of.get(k[1]),) + k[2:]
        if ft.get(key) != t["total"][i]:
            bad.append("node %d: %s samples, %s in the full tree" % (i, t["total"][i], ft.get(key)))
            break
    for b in bad:
        print(b)
    if not bad:
        print("ok")
    return 1 if bad else 0


sys.exit(main())
