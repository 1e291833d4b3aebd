#!/usr/bin/env python3
"""HTA's computation/communication overlap of each rank of a Kineto job,
computed here from the JSON alone, as HolisticTraceAnalysis does it
(hta/analyzers/communication_analysis.py, get_comm_comp_overlap; its
kernel classes from hta/utils/utils.py):

  - the GPU events: those with a stream (args.stream present and not -1):
    kernels, memcpy, memset;
  - a kernel whose name has "nccl" is communication; "Memcpy" or "Memset"
    in the name is memory; anything else computation;
  - the intervals [ts, ts + dur) of each class are merged (overlapping or
    touching ones joined);
  - overlap = the time both a merged communication interval and a merged
    computation interval are running / the merged communication time.

Written from HTA's definition, independently of InferScope's code.
Usage: hta_overlap.py RANK_FILE...   prints "RANK PCT" per file (percent, 4 decimals).
"""
import gzip
import json
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def merge(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(a, b):
    i = j = 0
    tot = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if e > s:
            tot += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def rank_overlap(doc):
    comm, comp = [], []
    for ev in doc.get("traceEvents", []):
        if ev.get("ph") != "X" or "dur" not in ev:
            continue
        args = ev.get("args") or {}
        if "stream" not in args or args["stream"] == -1:
            continue
        name = ev.get("name", "")
        iv = (float(ev["ts"]), float(ev["ts"]) + float(ev["dur"]))
        if "nccl" in name:
            comm.append(iv)
        elif "Memcpy" in name or "Memset" in name:
            continue
        else:
            comp.append(iv)
    comm, comp = merge(comm), merge(comp)
    ct = sum(e - s for s, e in comm)
    return 100.0 * overlap(comm, comp) / ct if ct else None


def main():
    for path in sys.argv[1:]:
        doc = load(path)
        rank = (doc.get("distributedInfo") or {}).get("rank")
        pct = rank_overlap(doc)
        print("%s %s" % (rank, "null" if pct is None else "%.4f" % pct))


if __name__ == "__main__":
    main()
