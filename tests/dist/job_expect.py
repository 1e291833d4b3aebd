#!/usr/bin/env python3
"""What iscope-merge and iscope-analyze must find in a Kineto job, computed
from the rank files' JSON alone (independently of InferScope's code), from
the rules stated in formats/timeline.md §11 and iscope-analyze(1):

  - a rank's collectives: its GPU events with a stream (args.stream present
    and not -1) whose name has "nccl" (HTA's rule), in start order, numbered
    per stream (streams numbered by their first collective); the i-th
    collective of stream k is matched with the i-th of stream k of every
    other rank (traces without process-group sequence numbers);
  - symmetric ones (AllReduce, AllGather, ReduceScatter, SendRecv, ...)
    align clocks: d(c) = end on rank 0's clock - end on rank r's clock
    (times in ns: Kineto's microseconds x 1000); a rank's offset is the
    median of d over the collectives (the mean of the two middle values,
    rounded down, for an even count), its uncertainty the largest
    |d - offset|;
  - with the starts put on rank 0's clock (start + offset), a rank's wait
    in a collective is the latest start of any rank minus its own; its
    total wait is the sum over the collectives; the last to arrive is the
    rank with the latest start (lowest rank on ties).

Usage: job_expect.py RANK_FILE...   prints, per rank in rank order:
  RANK r WORLD w OFFSET ns UNCERTAINTY ns USED n WAIT ns LAST k LATE ns
"""
import decimal
import gzip
import json
import sys

SYMMETRIC = ("AllReduce", "AllGather", "ReduceScatter", "SendRecv", "AllToAll", "Barrier")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def ns(us):
    """Microseconds (a JSON number) to integer ns, exactly: epoch stamps exceed a double's 53 bits."""
    return int(decimal.Decimal(str(us)) * 1000)


def collectives(doc):
    ev = []
    for e in doc.get("traceEvents", []):
        a = e.get("args") or {}
        if e.get("ph") != "X" or "dur" not in e or "stream" not in a or a["stream"] == -1:
            continue
        if "nccl" not in e.get("name", ""):
            continue
        ev.append((ns(e["ts"]), ns(e["dur"]), a["stream"], e["name"]))
    ev.sort()
    chans, count, out = {}, {}, {}
    for ts, dur, stream, name in ev:
        k = chans.setdefault(stream, len(chans))
        i = count.get(k, 0)
        count[k] = i + 1
        out[(k, i)] = (ts, ts + dur, any(s in name for s in SYMMETRIC))
    return out


def median(v):
    v = sorted(v)
    a, b = v[(len(v) - 1) // 2], v[len(v) // 2]
    return (a + b) // 2


def main():
    ranks = {}
    for path in sys.argv[1:]:
        doc = load(path)
        info = doc.get("distributedInfo") or {}
        ranks[info["rank"]] = (info.get("world_size"), collectives(doc))
    order = sorted(ranks)
    ref = ranks[order[0]][1]
    off, unc, used = {}, {}, {}
    for r in order:
        cs = ranks[r][1]
        d = [ref[k][1] - cs[k][1] for k in cs if k in ref and cs[k][2] and ref[k][2]]
        off[r] = median(d) if d else 0
        unc[r] = max(abs(x - off[r]) for x in d) if d else 0
        used[r] = len(d) if r != order[0] else 0
    wait = {r: 0 for r in order}
    last = {r: 0 for r in order}
    late = {r: [] for r in order}
    keys = set.intersection(*(set(ranks[r][1]) for r in order))
    for k in keys:
        starts = {r: ranks[r][1][k][0] + off[r] for r in order}
        top = max(starts.values())
        for r in order:
            wait[r] += top - starts[r]
            late[r].append(starts[r] - median([starts[q] for q in order if q != r]))
        if sum(1 for r in order if starts[r] == top) == 1:
            last[max(order, key=lambda r: starts[r])] += 1
    for r in order:
        print("RANK %d WORLD %d OFFSET %d UNCERTAINTY %d USED %d WAIT %d LAST %d LATE %s" %
              (r, ranks[r][0], off[r], unc[r], used[r], wait[r], last[r],
               median(late[r]) if late[r] else "null"))


if __name__ == "__main__":
    main()
