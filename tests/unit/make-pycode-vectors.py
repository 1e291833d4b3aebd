#!/usr/bin/env python3
# Prints stack-depth test vectors for tests/unit/pycode_vectors.h: small
# functions compiled by the running CPython, and for each the depth of the
# value stack at every call instruction, in code order, counted by hand
# below (not by any program).  Run with each CPython 3.9-3.13 and
# concatenate (tests/unit/test_pycode.c checks lib/record/pycode.c on them).
#
# The hand count.  At a call the stack holds what the statement had pushed
# before it, then the callable's slots, then the arguments:
#   C, the slots of a plain callable g: 1 up to 3.10 (g); 2 from 3.11
#      (3.11/3.12: a NULL under g; 3.13: g over a NULL);
#   M, the slots of a method call a.m: 2 (the method and a, or NULL and the
#      attribute) in every version;
#   K, a tuple of keyword names on the stack: 1 up to 3.10
#      (CALL_FUNCTION_KW) and from 3.13 (CALL_KW); 0 in 3.11/3.12 (KW_NAMES).
#   A for loop keeps its iterator (1); `with` keeps the exit function (1),
#   which it calls at the end with three Nones (4 in all);
#   an except block up to 3.10 keeps 3 (the previous exception state) under
#   its body, from 3.11 1 (the previous exception).
import sys

v = sys.version_info[:2]
C = 1 if v < (3, 11) else 2
M = 2
K = 1 if v < (3, 11) or v >= (3, 13) else 0
EXC = 3 if v < (3, 11) else 1

cases = [
    ("def f(a):\n    return g(a, 1)\n", [C + 2]),
    ("def f(a):\n    return a.m(1)\n", [M + 1]),
    ("def f(x):\n    return x + g(x)\n", [1 + C + 1]),
    ("def f(xs):\n    for x in xs:\n        g(x)\n", [1 + C + 1]),
    ("def f(a, b):\n    g(a, h(b), 2)\n", [C + 1 + C + 1, C + 3]),
    # then the exit: the exit function and three Nones
    ("def f(a):\n    with a:\n        g()\n", [1 + C, 4]),
    ("def f(a):\n    return a[g()]\n", [1 + C]),
    ("def f(d):\n    return g(*d)\n", [C + 1]),
    ("def f(a):\n    return g(a, k=1)\n", [C + 2 + K]),
    ("def f():\n    try:\n        g()\n    except E:\n        h()\n", [C, EXC + C]),
]

import dis

CALLS = {"CALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_METHOD", "CALL_FUNCTION_EX", "CALL_KW"}


def lit(b):
    return '"' + "".join("\\x%02x" % x for x in b) + '"'


ns = {}
name = "v3%d" % v[1]
print("/* %s: CPython %d.%d.%d */" % (name, v[0], v[1], sys.version_info[2]))
print("static const struct pycode_case %s_cases[] = {" % name)
for src, want in cases:
    exec(compile(src, "v.py", "exec"), ns)
    co = ns["f"].__code__
    exc = getattr(co, "co_exceptiontable", b"")
    units = [i.offset // 2 for i in dis.get_instructions(co) if i.opname in CALLS]
    assert len(units) == len(want), (src, units)
    print("\t{ %d, %s, %d, %s, %d, %s, %d, { %s }, { %s }, %d }," % (
        v[1], '"' + src.replace("\n", "\\n") + '"', co.co_stacksize, lit(co.co_code), len(co.co_code),
        lit(exc), len(exc), ", ".join(str(u) for u in units), ", ".join(str(d) for d in want), len(units)))
print("};")
