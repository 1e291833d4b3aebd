#!/usr/bin/env python3
"""Regenerates the bad Kineto fixtures of this directory (see README.md)."""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def event(i, pid=100, tid=100):
    return {"ph": "X", "cat": "cpu_op", "name": "aten::op%d" % i, "pid": pid, "tid": tid,
            "ts": 1000 + 10 * i, "dur": 5}


def trace(events, **top):
    d = {"schemaVersion": 1}
    d.update(top)
    d["traceEvents"] = events
    return d


def text(d):
    return json.dumps(d, indent=1) + "\n"


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    good = text(trace([event(i) for i in range(6)]))
    # cut inside the fourth event's name
    write("truncated.json", good[:good.index("aten::op3") + 5])
    big = text(trace([event(i) for i in range(3000)], baseTimeNanoseconds=1700000000000000000))
    gz = gzip.compress(big.encode(), mtime=0)
    write("truncated.json.gz", gz[:len(gz) * 6 // 10])
    corrupt = bytearray(gz)
    for i in range(len(gz) // 2, len(gz) // 2 + 16):
        corrupt[i] ^= 0x55
    write("corrupt.json.gz", bytes(corrupt))
    wrong = [event(0),
             dict(event(1), ts="1010"),                 # ts as a string
             dict(event(2), pid={"id": 100}),           # pid as an object
             dict(event(3), ph=88),                     # ph as a number
             dict(event(4), args=[1, 2]),               # args as an array
             event(5)]
    write("wrong-types.json", text(trace(wrong)))
    write("not-a-trace.json", text({"schemaVersion": 1, "events": [event(0)]}))
    huge = text(trace([event(0), event(1), event(2)]))
    huge = huge.replace('"ts": 1010', '"ts": 1e400', 1).replace('"dur": 5\n  }\n ]',
                                                                '"dur": 99999999999999999999999\n  }\n ]', 1)
    write("huge-number.json", huge)
    deep = ("{\"traceEvents\": [\n" + json.dumps(event(0)) + ",\n"
            + "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"deep\", \"pid\": 100, \"tid\": 100, "
            + "\"ts\": 1010, \"dur\": 5, \"args\": {\"a\": " + "[" * 5000 + "]" * 5000 + "}},\n"
            + json.dumps(event(2)) + "\n],\n\"x\": " + "[" * 100000 + "]" * 100000 + "}\n")
    write("deep-nesting.json", deep)
    write("empty-array.json", text({"schemaVersion": 1, "traceEvents": []}))
    syn = text(trace([event(0), event(1), event(2)]))
    write("syntax-error.json", syn.replace("},\n  {", "} x\n  {", 1).replace("\n  {", "\n  {", 1))
    write("not-json.json", "this is not JSON\n")


if __name__ == "__main__":
    main()
