#!/usr/bin/env python3
"""Reject bats lines whose check cannot fail.

    lint_bats.py FILE|DIR...    print FILE:LINE: reason for each bad line
                                (a DIR: every *.bats under it); exit 1
                                if any, 0 if none, 2 on usage
    lint_bats.py --self-test BAD GOOD
                                BAD must be rejected on exactly the lines
                                marked "EXPECT-REJECT", GOOD accepted whole

Why (bats 1.8, bash `set -e`):
  * `! cmd` on a line of its own never fails a test: bash ignores the
    status of a negated command under `set -e`. Write `run ! cmd`.
  * `[ a ] && [ b ]` fails the test only through its last part: a false
    `[ a ]` ends the list without an error. Write one check per line.
  * `[[ a && b ]]` as a check of its own is one assertion hiding two:
    write two lines, so the failing one is the one bats prints.
Lines inside here-documents are not bash and are not looked at.
"""
import glob
import os
import re
import sys

# `!` starting a command: at the start of the line or after ; | & do then else.
NEGATED = re.compile(r"(?:^|[;&|]|\bdo\b|\bthen\b|\belse\b)\s*!\s")
# a test bracket (or arithmetic check) closing, &&, another one opening
COMPOUND = re.compile(r"(?:\]\]?|\)\))\s*&&\s*(?:\[\[?|\(\(|test\b)")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def top_level_and(line):
    """True if a standalone `[[ ... ]]` line has && outside parentheses."""
    s = line.strip()
    if not (s.startswith("[[") and s.endswith("]]")):
        return False
    body, depth, quote, i = s[2:-2], 0, None, 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif body.startswith("&&", i) and depth == 0:
            return True
        i += 1
    return False


def lint(path):
    """Yield (line number, reason) for each line of PATH that checks nothing."""
    heredoc = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if heredoc is not None:
                if line.strip() == heredoc:
                    heredoc = None
                continue
            m = HEREDOC.search(line)
            if m:
                heredoc = m.group(2)
            code = line.lstrip()
            if code.startswith("#"):
                continue
            code = re.sub(r"\s+#[^'\"]*$", "", code)  # a trailing comment
            if NEGATED.search(code) and not re.match(r"run\s+(--\S+\s+)*!", code):
                yield n, "negated command checks nothing under set -e: write `run ! cmd`"
            if COMPOUND.search(code):
                yield n, "`&&` between checks: only the last one can fail; one check per line"
            elif top_level_and(code):
                yield n, "`&&` inside [[ ]]: two checks on one line; one check per line"


def main(argv):
    if len(argv) == 4 and argv[1] == "--self-test":
        bad, good = argv[2], argv[3]
        with open(bad, encoding="utf-8") as f:
            want = {n for n, l in enumerate(f, 1) if "EXPECT-REJECT" in l}
        got = {n for n, _ in lint(bad)}
        rc = 0
        for n in sorted(want - got):
            print("%s:%d: not rejected (marked EXPECT-REJECT)" % (bad, n))
            rc = 1
        for n in sorted(got - want):
            print("%s:%d: rejected but not marked EXPECT-REJECT" % (bad, n))
            rc = 1
        if not want:
            print("%s: no line marked EXPECT-REJECT" % bad)
            rc = 1
        for n, why in lint(good):
            print("%s:%d: good sample rejected: %s" % (good, n, why))
            rc = 1
        if rc == 0:
            print("lint_bats: %d bad lines rejected, good sample accepted" % len(want))
        return rc
    if len(argv) < 2 or argv[1].startswith("-"):
        print("usage: lint_bats.py FILE... | --self-test BAD GOOD", file=sys.stderr)
        return 2
    paths = []
    for arg in argv[1:]:
        if os.path.isdir(arg):
            paths += sorted(glob.glob(os.path.join(arg, "**", "*.bats"), recursive=True))
        else:
            paths.append(arg)
    if not paths:
        print("lint_bats: no .bats file in %s" % " ".join(argv[1:]), file=sys.stderr)
        return 1
    bad = 0
    for path in paths:
        for n, why in lint(path):
            print("%s:%d: %s" % (path, n, why))
            bad += 1
    if not bad:
        print("lint_bats: %d bats files, every check can fail" % len(paths))
    if bad:
        print("lint_bats: %d line(s) to fix" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
