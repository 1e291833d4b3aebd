#!/usr/bin/env python3
"""Extracts the runnable examples of a document, so that a test runs them
(as jq runs its manual's examples).

    doc_examples.py FILE

FILE is a roff page (man/*.in) or Markdown (README.md).  A runnable example
is marked where it is written:

  roff      the comment line  .\\" example  just before its .EX or .nf block
            (.RS / .PP lines may come between); the block runs to .EE / .fi
  Markdown  a fenced block whose info string is  sh example

Prints each example as its shell text after roff unescaping (\\- is -, \\e
is a backslash, @VERSION@ and friends stay: the examples do not use them),
examples separated by NUL bytes, in the order of the document.  Exit 1 when
the file has no marked example (a marker that matches nothing is a bug).
"""
import re
import sys


def roff_text(line):
    line = line.replace("\\-", "-").replace("\\e", "\\").replace("\\(aq", "'").replace("\\(dq", '"')
    return re.sub(r"\\f[BIRP]", "", line)


def roff_examples(lines):
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() != '.\\" example':
            i += 1
            continue
        i += 1
        while i < len(lines) and lines[i].strip() in (".RS", ".PP", ".IP"):
            i += 1
        if i >= len(lines) or lines[i].strip() not in (".EX", ".nf"):
            sys.exit("doc_examples: a marker at line %d is not followed by .EX or .nf" % i)
        end = ".EE" if lines[i].strip() == ".EX" else ".fi"
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != end:
            body.append(roff_text(lines[i]))
            i += 1
        out.append("\n".join(body) + "\n")
    return out


def md_examples(lines):
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "```sh example":
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        out.append("\n".join(body) + "\n")
    return out


def main():
    path = sys.argv[1]
    lines = open(path, encoding="utf-8").read().split("\n")
    ex = md_examples(lines) if path.endswith(".md") else roff_examples(lines)
    if not ex:
        sys.exit("doc_examples: %s: no marked example" % path)
    sys.stdout.write("\0".join(ex))


if __name__ == "__main__":
    main()
