#!/usr/bin/env python3
"""Checks lib/record/pycode.c (through tests/unit/pycode_tool) against the
running CPython itself, printing TAP:

1. the stack-effect table of this version against dis.stack_effect, for
   every opcode, opargs 0..599 and 65535, jump taken or not (3.11: PRECALL
   and CALL are compared as a pair, see lib/record/pylayout.h);
2. the depth at every instruction of every code object compiled from a
   set of standard-library modules, against a depth computed here
   independently: a walk over dis.get_instructions with dis.stack_effect,
   the jump targets dis gives, and (3.11+) the exception table dis parses.
   No depth exceeds co_stacksize.

Usage: check-pycode.py TOOL   (run it with each CPython to check)
"""
import dis
import opcode
import os
import subprocess
import sys
import types

V = sys.version_info[:2]
TOOL = sys.argv[1]
proc = subprocess.Popen([TOOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
results = []


def ask(line):
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().rstrip("\n")


def ok(cond, what):
    results.append((bool(cond), what))


# ---- 1. stack effects ---------------------------------------------------
# Where the interpreter's stack differs from the compiler's books
# (lib/record/pylayout.h): a generator's first resumption pushes the value
# sent (3.11, 3.12: after RETURN_GENERATOR; 3.10: before GEN_START, whose
# code is counted from depth 0).
RUNTIME = {"RETURN_GENERATOR": {(3, 11): 1, (3, 12): 1}, "GEN_START": {(3, 10): 0}}
proc.stdin.write("E %d\n" % V[1])
proc.stdin.flush()
table = {}
while True:
    line = proc.stdout.readline().split()
    if not line or line[0] == "end" or line[0] == "no":
        break
    table[(int(line[0]), int(line[1]))] = [int(x) for x in line[2:]]
ARGS = list(range(600)) + [65535]
bad = []
precall, call = opcode.opmap.get("PRECALL"), opcode.opmap.get("CALL")
for name, op in opcode.opmap.items():
    if op >= 256 or name in ("CACHE", "RESERVED", "INSTRUMENTED_LINE", "INSTRUMENTED_INSTRUCTION",
                             "ENTER_EXECUTOR") or name.startswith("INSTRUMENTED_"):
        continue
    for j in (0, 1):
        got = table.get((op, j))
        if got is None:
            bad.append("%s missing" % name)
            break
        for k, a in enumerate(ARGS):
            want = dis.stack_effect(op, a if op >= opcode.HAVE_ARGUMENT else None, jump=bool(j))
            mine = got[k]
            if V == (3, 11) and op in (precall, call):
                # the interpreter pops a call's arguments in CALL; the compiler books them on PRECALL
                want = dis.stack_effect(precall, a, jump=bool(j)) + dis.stack_effect(call, a, jump=bool(j))
                mine = table[(precall, j)][k] + table[(call, j)][k]
            elif name in RUNTIME and V in RUNTIME[name]:
                want = RUNTIME[name][V]
            if want != mine:
                bad.append("%s(%d, jump=%d): %d, dis says %d" % (name, a, j, mine, want))
                break
ok(not bad and table, "3.%d: the stack effect of every opcode as dis.stack_effect (%s)" % (V[1], "; ".join(bad[:5])))

# ---- 2. depths of real code objects ---------------------------------------
ENDS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_ABSOLUTE",
        "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
JUMPS = set(opcode.hasjrel) | set(opcode.hasjabs)


def effect(ins, jump):
    arg = ins.arg if ins.opcode >= opcode.HAVE_ARGUMENT else None
    if V == (3, 11) and ins.opname == "PRECALL":
        return 0
    if V == (3, 11) and ins.opname == "CALL":
        return -1 - ins.arg
    if ins.opname in RUNTIME and V in RUNTIME[ins.opname]:
        return RUNTIME[ins.opname][V]
    return dis.stack_effect(ins.opcode, arg, jump=jump)


def depths_here(co):
    """Depth at each instruction offset, by CPython's own dis (independent of pycode.c)."""
    ins = list(dis.get_instructions(co))
    at = {i.offset: k for k, i in enumerate(ins)}
    depth = {}
    todo = []

    def reach(off, d):
        if off in depth:
            if depth[off] != d:
                raise ValueError("offset %d reached at %d and %d" % (off, depth[off], d))
            return
        depth[off] = d
        todo.append(off)
    reach(ins[0].offset, 0)
    if V >= (3, 11):
        for e in dis._parse_exception_table(co):
            reach(e.target, e.depth + int(e.lasti) + 1)
    while todo:
        k = at[todo.pop()]
        i = ins[k]
        d = depth[i.offset]
        if i.opname not in ENDS and k + 1 < len(ins):
            reach(ins[k + 1].offset, d + effect(i, False))
        if i.opcode in JUMPS:
            reach(i.argval, d + effect(i, True))
    return {off // 2: d for off, d in depth.items()}


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def exctab(co):
    t = getattr(co, "co_exceptiontable", b"")
    return t.hex() if t else "-"


mods = ["json/decoder.py", "json/encoder.py", "argparse.py", "dataclasses.py", "collections/__init__.py",
        "email/_header_value_parser.py", "asyncio/base_events.py", "typing.py", "inspect.py", "zipfile.py",
        "tarfile.py", "functools.py", "pathlib.py", "contextlib.py", "enum.py"]
lib = os.path.dirname(os.__file__)
n = nbad = over = 0
first_bad = ""
for m in mods:
    path = os.path.join(lib, m)
    if not os.path.exists(path):
        path = os.path.join(lib, m.replace(".py", "/__init__.py"))
    if not os.path.exists(path):
        continue
    top = compile(open(path, encoding="utf-8").read(), path, "exec")
    for co in codes(top):
        n += 1
        want = depths_here(co)
        got = ask("D %d %d %s %s" % (V[1], co.co_stacksize, co.co_code.hex(), exctab(co)))
        if got.startswith("error"):
            nbad += 1
            first_bad = first_bad or "%s %s: %s" % (m, co.co_name, got)
            continue
        mine = dict((int(a), int(b)) for a, b in (p.split(":") for p in got.split()))
        if mine != want:
            nbad += 1
            diff = [u for u in sorted(set(mine) | set(want)) if mine.get(u) != want.get(u)]
            first_bad = first_bad or "%s %s unit %d: %s, dis %s" % (m, co.co_name, diff[0], mine.get(diff[0]),
                                                                     want.get(diff[0]))
        elif mine and max(mine.values()) > co.co_stacksize:
            over += 1
ok(n > 500 and nbad == 0, "3.%d: depth at every instruction of %d code objects of the standard library as dis "
   "computes it (%d differ%s)" % (V[1], n, nbad, ": " + first_bad if first_bad else ""))
ok(over == 0, "3.%d: no depth above co_stacksize (%d code objects over)" % (V[1], over))

proc.stdin.close()
proc.wait()
print("1..%d" % len(results))
for k, (good, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if good else "not ok", k, what))
sys.exit(0 if all(g for g, _ in results) else 1)
