#!/usr/bin/env python3
"""The closing summary of scripts/test.sh, from meson's test logs.

    test-summary.py [--failed N] BUILD_DIR...

For each BUILD_DIR, reads meson-logs/testlog.json (one entry per meson
test) and meson-logs/testlog.junit.xml (one entry per TAP subtest) and
prints, so that nothing green hides anything:
  * every known failure: a meson test declared should_fail (EXPECTEDFAIL)
    or a TAP subtest "not ok ... # TODO reason", with its reason;
  * every skip: a meson test that skipped as a whole (exit 77, "1..0 #
    SKIP") and every TAP subtest "ok ... # skip reason" inside a test
    that passed, with its reason;
  * every failure, by name, followed by up to 12 lines of why (the
    "not ok" lines and the "#" diagnostics bats printed after them, else
    the last lines of the test's output) and its exit status: CI shows
    only the tail of a run, so the reason has to be here.
The last line is "N passed, N failed" followed by ", N skipped" when
anything was skipped (CI reads that line). passed counts meson tests that
passed or failed as expected; failed counts meson tests that did not pass,
a missing log and the N of --failed (builds that failed); skipped counts
skipped meson tests plus skipped subtests. Exit status 1 when failed > 0.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def why_failed(t, limit=12):
    """The lines of a failed test's output that say why, at most limit."""
    out = (t.get("stdout") or "").splitlines() + (t.get("stderr") or "").splitlines()
    picked, inside = [], False
    for l in out:
        if l.startswith("not ok"):
            inside = True
        elif l.startswith("ok ") or l.startswith("1.."):
            inside = False
        if inside:
            picked.append(l.rstrip())
    if not picked:
        picked = [l.rstrip() for l in out if l.strip()][-limit:]
    if len(picked) > limit:
        picked = picked[:limit - 1] + ["... (%d more lines in meson-logs/testlog.txt)" % (len(picked) - limit + 1)]
    if t.get("returncode") not in (None, 0):
        picked.append("(exit status %s)" % t["returncode"])
    return picked


def main(argv):
    extra_failed = 0
    dirs = []
    args = iter(argv[1:])
    for a in args:
        if a == "--failed":
            extra_failed = int(next(args))
        else:
            dirs.append(a)
    passed = failed = skipped = 0
    known, skips, fails = [], [], []
    for d in dirs:
        log = os.path.join(d, "meson-logs", "testlog.json")
        if not os.path.isfile(log) or os.path.getsize(log) == 0:
            fails.append("%s: no test log (meson test did not run)" % d)
            failed += 1
            continue
        tests = []
        with open(log, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    if line.strip():
                        tests.append(json.loads(line))
                except ValueError:
                    fails.append("%s: line %d: unreadable (two meson test runs at once?)" % (log, n))
                    failed += 1
        for t in tests:
            res, name = t["result"], "%s: %s" % (d, t["name"])
            out = (t.get("stdout") or "").strip().splitlines()
            why = next((l.strip() for l in out if "KNOWN FAILURE" in l or "SKIP" in l.upper()), "")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
                if res == "EXPECTEDFAIL":
                    known.append("%s %s" % (name, why))
            elif res == "SKIP":
                skipped += 1
                skips.append("%s (the whole test) %s" % (name, out[-1] if out else ""))
            else:
                failed += 1
                fails.append("%s: %s" % (name, res))
                fails.extend("  | " + l for l in why_failed(t))
        junit = os.path.join(d, "meson-logs", "testlog.junit.xml")
        if not os.path.isfile(junit):
            continue
        for suite in ET.parse(junit).getroot().iter("testsuite"):
            # a TAP test's suite is named PROJECT.TEST; plain tests share one
            # suite named PROJECT (counted above from testlog.json)
            if "." not in suite.get("name", ""):
                continue
            sname = suite.get("name").split(".", 1)[1]
            for case in suite.iter("testcase"):
                kids = {c.tag for c in case}
                text = case.findtext("system-out") or ""
                label = "%s: %s: %s" % (d, sname, case.get("name"))
                if "skipped" in kids:
                    skipped += 1
                    skips.append("%s # skip %s" % (label, text))
                elif kids == {"system-out"}:
                    known.append("%s # TODO %s" % (label, text))
    failed += extra_failed
    if extra_failed:
        fails.append("%d build(s) failed (see above)" % extra_failed)
    print("== summary")
    for k in known:
        print("known failure: " + k)
    for s in skips:
        print("skipped: " + s)
    for f in fails:
        print(f if f.startswith("  | ") else "FAILED: " + f)
    if known:
        print("(%d known failure(s): each one is a bug or a gap with its reason; they count as passed)" % len(known))
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
