"""Planted truth: pure-Python arithmetic, no call inside the hot loops.

Each of 30 steps (scope "step") runs three loops of `s += i * i % 13`
over ranges of 60 000, 120 000 and 180 000 integers, one function each
(light, medium, heavy: 1 : 2 : 3 of the work).  Every instruction of the
loops is the interpreter's own: the operands are ints, so BINARY_OP and
the in-place add run CPython's integer code, not an extension's; the only
calls per step are scope(), the three function calls and range(), each a
few microseconds against a step of tens of milliseconds.

Expected, by construction: about 0 % of the CPU time in C calls (of the
time in iterations, torch ops + other C code below 2 %: a margin for the
per-step calls and the sampling error), no op row (a C callee) at 1 % or
more of the functions in iterations, and the three loop functions the top
rows, heaviest first.
"""
try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def loop(n):
    s = 0
    for i in range(n):
        s += i * i % 13
    return s


def light():
    return loop(60000)


def medium():
    return loop(120000)


def heavy():
    return loop(180000)


for step in range(30):
    with scope("step"):
        light()
        medium()
        heavy()
