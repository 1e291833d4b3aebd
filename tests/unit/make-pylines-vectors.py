#!/usr/bin/env python3
# Prints line-table test vectors for tests/unit/pylines_vectors.h: a small
# function's line table as the running CPython compiled it, and the line of
# every instruction offset as CPython itself says (dis.findlinestarts before
# 3.10, co_lines() after).  Run with each CPython 3.9-3.13 and concatenate.
import sys, dis
src = '''
def f(a):
    x = a + 1

    if x > 2:
        y = [i for i in range(x)]
    else:
        y = None
    for k in range(3):
        x += k
    return (x,
            y)
'''
ns = {}
exec(compile(src, "v.py", "exec"), ns)
co = ns["f"].__code__
v = sys.version_info
if v < (3, 10):
    tab, fmt, unit = co.co_lnotab, "ISC_PY_LINES_LNOTAB", 1
    starts = dict(dis.findlinestarts(co))
    lines = []
    cur = co.co_firstlineno
    for off in range(0, len(co.co_code), 2):
        cur = starts.get(off, cur)
        lines.append((off, cur))
else:
    tab = co.co_linetable
    fmt = "ISC_PY_LINES_310" if v < (3, 11) else "ISC_PY_LINES_311"
    unit = 1 if v < (3, 11) else 2
    lines = []
    for s, e, l in co.co_lines():
        for off in range(s, e, 2):
            lines.append((off // unit, l or 0))
name = "v3%d" % v[1]
print("static const uint8_t %s_tab[] = { %s };" % (name, ", ".join(str(b) for b in tab)))
print("static const int %s_exp[][2] = { %s };" % (name, ", ".join("{%d, %d}" % p for p in lines)))
print("/* %s: %s, first line %d */" % (name, fmt, co.co_firstlineno))
