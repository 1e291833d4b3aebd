#!/usr/bin/env python3
"""Altered copies of a job's Kineto rank files, for tests/dist/dist.bats
(the originals are never written):

  job_variants.py shift FILE SECONDS OUT       every timestamp moved by SECONDS
                                               (a host clock that far off)
  job_variants.py world FILE N OUT             distributedInfo.world_size = N
  job_variants.py straggler RANK MS OUTDIR FILE...
        every rank but RANK starts each "nccl" kernel MS earlier, its end
        unchanged (the kernel waits that much longer): RANK arrives MS late
        in every collective, a planted straggler; written as
        OUTDIR/<basename>
  job_variants.py truncate FILE FRACTION OUT   the gzip file cut after that
                                               share of its bytes
  job_variants.py slowkernel FILE NAME MS OUT  the first GPU kernel named NAME
                                               made MS longer (extra work)
"""
import decimal
import gzip
import json
import os
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def save(doc, path):
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)


def shift_us(v, d):
    return int(decimal.Decimal(str(v)) + d) if isinstance(v, int) else float(decimal.Decimal(str(v)) + d)


def main():
    mode = sys.argv[1]
    if mode == "shift":
        doc = load(sys.argv[2])
        d = decimal.Decimal(sys.argv[3]) * 1000000
        for e in doc["traceEvents"]:
            if "ts" in e:
                e["ts"] = shift_us(e["ts"], d)
        save(doc, sys.argv[4])
    elif mode == "world":
        doc = load(sys.argv[2])
        doc["distributedInfo"]["world_size"] = int(sys.argv[3])
        save(doc, sys.argv[4])
    elif mode == "straggler":
        rank, ms, out = int(sys.argv[2]), decimal.Decimal(sys.argv[3]), sys.argv[4]
        for path in sys.argv[5:]:
            doc = load(path)
            if doc["distributedInfo"]["rank"] != rank:
                for e in doc["traceEvents"]:
                    a = e.get("args") or {}
                    if e.get("ph") == "X" and "nccl" in e.get("name", "") and a.get("stream", -1) != -1:
                        e["ts"] = shift_us(e["ts"], -ms * 1000)
                        e["dur"] = shift_us(e["dur"], ms * 1000)
            save(doc, os.path.join(out, os.path.basename(path)))
    elif mode == "truncate":
        with open(sys.argv[2], "rb") as f:
            b = f.read()
        with open(sys.argv[4], "wb") as f:
            f.write(b[:int(len(b) * float(sys.argv[3]))])
    elif mode == "slowkernel":
        doc = load(sys.argv[2])
        for e in doc["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("name") == sys.argv[3]:
                e["dur"] = shift_us(e["dur"], decimal.Decimal(sys.argv[4]) * 1000)
                break
        else:
            sys.exit("no kernel " + sys.argv[3])
        save(doc, sys.argv[5])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
