#!/usr/bin/python3
"""Validate findings documents against formats/findings.schema.json.

    validate_findings.py [--schema SCHEMA] FILE...

Uses the jsonschema module (Debian: python3-jsonschema, installed by
scripts/install-deps.sh --tests), Draft 2020-12: every keyword the schema
uses is enforced, additionalProperties, minItems and maxItems included.
Before any document, the schema itself is checked: it must be a valid
Draft 2020-12 schema, and every object schema that lists properties must
say what other properties may be (additionalProperties), so that a field
added to the output without the schema fails here.

Prints one line per error (file, JSON path, message); exit 0 when every
FILE is valid, 1 when one is not (or jsonschema is missing: a missing
validator is a failure, not a skip), 2 on usage errors.
"""
import json
import os
import sys

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "formats", "findings.schema.json")


def loose_objects(node, path="#"):
    """Paths of object schemas with properties but no additionalProperties."""
    out = []
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            out.append(path)
        for k, v in node.items():
            out += loose_objects(v, path + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += loose_objects(v, "%s/%d" % (path, i))
    return out


def main(argv):
    args = argv[1:]
    schema_path = SCHEMA
    if args[:1] == ["--schema"] and len(args) >= 2:
        schema_path, args = args[1], args[2:]
    if not args or any(a.startswith("-") for a in args):
        print("usage: validate_findings.py [--schema SCHEMA] FILE...", file=sys.stderr)
        return 2
    try:
        import jsonschema
    except ImportError:
        print("validate_findings: no jsonschema module for %s (install python3-jsonschema: "
              "scripts/install-deps.sh --tests)" % sys.executable)
        return 1
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    cls = jsonschema.Draft202012Validator
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        print("%s: not a valid Draft 2020-12 schema: %s" % (schema_path, e.message))
        return 1
    loose = loose_objects(schema)
    for p in loose:
        print("%s: %s lists properties but not additionalProperties" % (schema_path, p))
    if loose:
        return 1
    validator = cls(schema)
    bad = 0
    for path in args:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("%s: %s" % (path, e))
            bad += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors:
            where = "".join("[%d]" % p if isinstance(p, int) else "." + p for p in e.absolute_path) or "."
            print("%s: %s: %s" % (path, where, e.message))
        bad += bool(errors)
    if not bad:
        print("validate_findings: %d document(s) valid" % len(args))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
