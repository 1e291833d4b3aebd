#!/usr/bin/env python3
"""Writes to stdout a synthetic Kineto trace of about MB megabytes of JSON:
the events of TRACE repeated, each copy shifted past the previous one.

  kineto_synth.py TRACE.json.gz MB
"""
import gzip
import json
import sys


def main():
    d = json.load(gzip.open(sys.argv[1]))
    ev = [e for e in d["traceEvents"] if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in ev) - min(e["ts"] for e in ev) + 1
    target, out, k, written = int(sys.argv[2]) << 20, sys.stdout, 0, 0
    out.write('{"traceEvents": [\n')
    sep = ""
    while written < target:
        for e in ev:
            c = dict(e, ts=e["ts"] + k * span)
            if isinstance(c.get("id"), int):
                c["id"] += k * 10**7
            s = sep + json.dumps(c)
            sep = ",\n"
            out.write(s)
            written += len(s)
        k += 1
    out.write("\n]}\n")


if __name__ == "__main__":
    main()
