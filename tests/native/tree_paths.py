#!/usr/bin/env python3
"""tree_paths.py FINDINGS [--no-threads]: the stacks of the findings'
native.tree as folded lines, "thread;frame;...;frame COUNT" (root first,
COUNT the node's self samples), one per node with self samples, sorted.
Written apart from lib/stacks and lib/report, from formats/findings.schema.json
alone, so the tests can check iscope-report -f folded against it and look
for paths in the tree.  Frame text as the folded format has it: a Python
frame "name (file:line)", a kernel function "name_[k]", else the name; ';'
becomes ':' and control characters spaces."""
import json
import sys


def clean(s):
    return "".join(" " if ord(c) < 0x20 or c == "\x7f" else (":" if c == ";" else c) for c in s)


def text(f):
    if f["kind"] == "python":
        return clean("%s (%s:%d)" % (f["name"], f["file"] or "", f["line"]))
    if f["kind"] == "kernel":
        return clean(f["name"] + "_[k]")
    return clean(f["name"])


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    tree = doc["native"]["tree"]
    labels = {}
    for t in tree["threads"]:
        name = ("%s %d/%d" % (t["name"], t["pid"], t["tid"])) if t["name"] else "%d/%d" % (t["pid"], t["tid"])
        labels[t["root"]] = clean(name)
    parent, frame, self_ = tree["parent"], tree["frame"], tree["self"]
    lines = []
    for i, s in enumerate(self_):
        if s == 0 or parent[i] < 0:
            continue
        path, k = [], i
        while parent[k] >= 0:
            path.append(text(tree["frames"][frame[k]]))
            k = parent[k]
        if "--no-threads" not in sys.argv:
            path.append(labels.get(k, "0/%d" % k))
        lines.append(";".join(reversed(path)) + " %d" % s)
    for line in sorted(lines):
        print(line)


main()
