#!/usr/bin/env python3
"""check_speedscope.py FILE [SAMPLES]: FILE follows speedscope's file
format: valid against its published JSON schema (draft-07, generated
from speedscope's src/lib/file-format-spec.ts; a copy in
tests/data/speedscope, validated with python3-jsonschema), which asks for
an object with "$schema" equal to
https://www.speedscope.app/file-format-schema.json, "shared" with a
"frames" array of objects with a string "name" (optional string "file",
numbers "line" and "col"), and "profiles", here all "sampled" ones with
string "name", a "unit" among bytes, microseconds, milliseconds,
nanoseconds, none and seconds, numbers "startValue" and "endValue",
"samples" (arrays of numbers) and "weights" (numbers).  Beyond the
schema, what speedscope's importer assumes: as many weights as samples,
frame indexes within shared.frames, and endValue - startValue = the sum
of the weights.  With SAMPLES, the weights of all profiles add up to
SAMPLES x the period (unit nanoseconds) or SAMPLES (unit none).
Prints what is wrong and exits 1; prints "ok" otherwise."""
import json
import os
import sys

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "speedscope", "file-format-schema.json")

UNITS = {"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    bad = []
    try:
        import jsonschema
    except ImportError:
        print("python3-jsonschema is missing: cannot validate against speedscope's schema")
        return 1
    schema = json.load(open(SCHEMA, encoding="utf-8"))
    for e in sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc), key=lambda e: [str(x) for x in e.absolute_path])[:10]:
        where = "/".join(str(x) for x in e.absolute_path) or "(root)"
        if e.validator == "anyOf" and len(e.absolute_path) == 2 and e.absolute_path[0] == "profiles":
            bad.append("schema: %s is not valid under any of speedscope's profile types" % where)
        else:
            bad.append("schema: %s: %s" % (where, e.message[:160]))
    if not isinstance(doc, dict):
        print("not an object")
        return 1
    for k in ("$schema", "profiles", "shared"):
        if k not in doc:
            bad.append("missing " + k)
    if doc.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
        bad.append("$schema is not speedscope's")
    frames = doc.get("shared", {}).get("frames")
    if not isinstance(frames, list):
        bad.append("shared.frames is not an array")
        frames = []
    for i, f in enumerate(frames):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            bad.append("frame %d has no string name" % i)
        elif ("file" in f and not isinstance(f["file"], str)) or any(k in f and not num(f[k]) for k in ("line", "col")):
            bad.append("frame %d: file, line or col of the wrong type" % i)
    total = 0
    for p in doc.get("profiles", []):
        for k in ("endValue", "name", "samples", "startValue", "type", "unit", "weights"):
            if k not in p:
                bad.append("profile without " + k)
        if p.get("type") != "sampled" or p.get("unit") not in UNITS or not isinstance(p.get("name"), str):
            bad.append("profile %r: type, unit or name" % p.get("name"))
        s, w = p.get("samples", []), p.get("weights", [])
        if len(s) != len(w) or not all(num(x) for x in w):
            bad.append("profile %r: %d samples, %d weights" % (p.get("name"), len(s), len(w)))
        for st in s:
            if not isinstance(st, list) or not all(num(x) and 0 <= x < len(frames) for x in st):
                bad.append("profile %r: a stack with a frame index out of range" % p.get("name"))
                break
        if not (num(p.get("startValue")) and num(p.get("endValue"))) or p["endValue"] - p["startValue"] != sum(w):
            bad.append("profile %r: endValue - startValue != sum of weights" % p.get("name"))
        total += sum(w)
    if len(sys.argv) > 2 and doc.get("profiles"):
        unit = doc["profiles"][0].get("unit")
        want = int(sys.argv[2]) * (int(sys.argv[3]) if unit == "nanoseconds" and len(sys.argv) > 3 else 1)
        if total != want:
            bad.append("weights add up to %s, expected %s" % (total, want))
    for b in bad[:20]:
        print(b)
    if not bad:
        print("ok")
    return 1 if bad else 0


sys.exit(main())
