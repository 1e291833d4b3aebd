#!/usr/bin/env python3
"""Tests of the Python agent (_agent + sitecustomize + inferscope) without
the recorder: runs small workloads under every available CPython 3.9-3.13
with INFERSCOPE_SESSION set, decodes the <pid>.shm files (layout of
lib/isc_shm.h, records of lib/isc_format.h) and checks what they hold.

usage: check_shm.py PYDIR      (PYDIR = built tools/iscope-record/python)
Prints TAP; exits 1 when a test fails.
"""
import glob
import re
import json
import mmap
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time

# ---- decoding the shared-memory file ---------------------------------------

SHM_MAGIC = 0x4D485349
SHM_VERSION = 2
SLOTS_OFF = 4096
SLOT_SIZE = 64
PROC = struct.Struct("<IIIIQIIQQQQIIQQQ2048sIII")
PROC_FIELDS = ("magic version pid ppid file_size nslots ring_size str_off str_size ring_off "
               "start_ts nslots_used state str_committed str_dropped slot_dropped cmdline "
               "cmdline_len nbig big_ring_size").split()
SLOT = struct.Struct("<IIQQQQ24s")
SLOT_FIELDS = "tid state head tail dropped last_ts name".split()
SLOT_HEAD_OFF, SLOT_TAIL_OFF = 8, 16

PY_CALL, PY_RETURN, C_CALL, C_RETURN = 0x01, 0x02, 0x03, 0x04
SCOPE_BEGIN, SCOPE_END, MARK, THREAD_BEGIN, THREAD_END, DROPPED = 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B
CALIBRATION = 0x0C
STRING_DEF = 0x81
RING_TYPES = {PY_CALL, PY_RETURN, C_CALL, C_RETURN, SCOPE_BEGIN, SCOPE_END, MARK,
              THREAD_BEGIN, THREAD_END, DROPPED, CALIBRATION}
STR_CODE, STR_CFUNC, STR_SCOPE, STR_MARK = 0, 1, 2, 3
PROC_EXITED = 2
SLOT_ACTIVE, SLOT_EXITED = 1, 2


class BadData(Exception):
    pass


def varint(buf, pos, end):
    v = shift = 0
    while True:
        if pos >= end:
            raise BadData("truncated varint at %d" % pos)
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7
        if shift > 63:
            raise BadData("overlong varint at %d" % pos)


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def records(buf, ts=0):
    """Yields (type, abs_ts or None, [fields], rest_bytes) for a ring stream."""
    pos, end = 0, len(buf)
    while pos < end:
        typ = buf[pos]
        size, p = varint(buf, pos + 1, end)
        if p + size > end:
            raise BadData("record at %d overruns the buffer" % pos)
        bend = p + size
        if typ not in RING_TYPES:
            raise BadData("unexpected record type 0x%02x at %d" % (typ, pos))
        delta, p = varint(buf, p, bend)
        ts += delta
        fields = []
        nfields = {PY_CALL: 1, C_CALL: 1, SCOPE_BEGIN: 1, MARK: 2, DROPPED: 1, CALIBRATION: 6}.get(typ, 0)
        for _ in range(nfields):
            v, p = varint(buf, p, bend)
            fields.append(v)
        rest = bytes(buf[p:bend])
        if rest and typ != THREAD_BEGIN:
            raise BadData("record 0x%02x at %d has %d extra bytes" % (typ, pos, len(rest)))
        yield typ, ts, fields, rest
        pos = bend


def string_defs(buf):
    """{id: (kind, line, name, file)} from a string area prefix."""
    out = {}
    pos, end = 0, len(buf)
    while pos < end:
        if buf[pos] != STRING_DEF:
            raise BadData("string area: type 0x%02x at %d" % (buf[pos], pos))
        size, p = varint(buf, pos + 1, end)
        bend = p + size
        if bend > end:
            raise BadData("string area: record at %d overruns" % pos)
        sid, p = varint(buf, p, bend)
        kind = buf[p]
        line, p = varint(buf, p + 1, bend)
        n, p = varint(buf, p, bend)
        name = bytes(buf[p:p + n]).decode("utf-8")
        p += n
        n, p = varint(buf, p, bend)
        file = bytes(buf[p:p + n]).decode("utf-8")
        p += n
        if p != bend:
            raise BadData("string area: record at %d has extra bytes" % pos)
        if sid in out:
            raise BadData("string id %d defined twice" % sid)
        out[sid] = (kind, line, name, file)
        pos = bend
    return out


class Shm(object):
    """A decoded <pid>.shm: header, slots, strings, records per slot."""

    def __init__(self, path, drained=None):
        with open(path, "rb") as f:
            data = f.read()
        self.path = path
        self.proc = dict(zip(PROC_FIELDS, PROC.unpack_from(data, 0)))
        p = self.proc
        if p["magic"] != SHM_MAGIC or p["version"] != SHM_VERSION:
            raise BadData("%s: bad magic/version %#x/%d" % (path, p["magic"], p["version"]))
        if p["file_size"] != len(data):
            raise BadData("%s: file_size %d, file has %d" % (path, p["file_size"], len(data)))
        rs = p["ring_size"]
        big = p["big_ring_size"] if p["nbig"] else rs
        if rs & (rs - 1) or big & (big - 1) or big < rs or p["nbig"] > p["nslots"] or \
                p["ring_off"] + ring_offset(p, p["nslots"]) > len(data):
            raise BadData("%s: bad ring layout" % path)
        if p["str_off"] < SLOTS_OFF + p["nslots"] * SLOT_SIZE or \
                p["str_off"] + p["str_size"] > p["ring_off"] or p["ring_off"] % 4096:
            raise BadData("%s: bad string area layout" % path)
        self.cmdline = p["cmdline"][:p["cmdline_len"]].split(b"\0")
        self.strings = string_defs(data[p["str_off"]:p["str_off"] + p["str_committed"]])
        self.slots = []
        for i in range(min(p["nslots_used"], p["nslots"])):
            s = dict(zip(SLOT_FIELDS, SLOT.unpack_from(data, SLOTS_OFF + i * SLOT_SIZE)))
            s["name"] = s["name"].rstrip(b"\0").decode("utf-8", "replace")
            used = s["head"] - s["tail"]
            if used > ring_len(p, i):
                raise BadData("%s slot %d: head-tail %d > ring %d" % (path, i, used, ring_len(p, i)))
            if drained is not None:
                buf = drained[i] + ring_bytes(data, p, i, s["tail"], s["head"])
            else:
                if s["tail"] != 0:
                    raise BadData("%s slot %d: consumed by someone else" % (path, i))
                buf = ring_bytes(data, p, i, s["tail"], s["head"])
            s["records"] = list(records(buf))
            self.slots.append(s)

    def name(self, sid):
        return self.strings.get(sid, (None, 0, None, None))[2]

    def all_records(self):
        for s in self.slots:
            for r in s["records"]:
                yield r

    def count(self, typ, name=None):
        n = 0
        for t, _, f, _ in self.all_records():
            if t == typ and (name is None or self.name(f[0]) == name):
                n += 1
        return n

    def ids_used(self):
        return set(f[0] for t, _, f, _ in self.all_records()
                   if t in (PY_CALL, C_CALL, SCOPE_BEGIN, MARK))


def ring_len(p, i):
    """Bytes of slot i's ring: the first nbig rings are big (lib/isc_shm.h)."""
    return p["big_ring_size"] if i < p["nbig"] else p["ring_size"]


def ring_offset(p, i):
    """Offset of slot i's ring from ring_off."""
    nbig = min(i, p["nbig"])
    return nbig * p["big_ring_size"] + (i - nbig) * p["ring_size"]


def ring_bytes(data, p, i, tail, head):
    rs = ring_len(p, i)
    base = p["ring_off"] + ring_offset(p, i)
    ring = data[base:base + rs]
    out = bytearray()
    pos = tail
    while pos < head:
        off = pos & (rs - 1)
        n = min(head - pos, rs - off)
        out += ring[off:off + n]
        pos += n
    return bytes(out)


# ---- TAP -------------------------------------------------------------------

class Tap(object):
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, diag=None):
        self.n += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, what))
        if not cond:
            self.failed += 1
            for line in str(diag).splitlines() if diag is not None else ():
                print("# " + line)
        sys.stdout.flush()
        return bool(cond)


# ---- workloads -------------------------------------------------------------

WORKLOAD = r'''
import json, os, subprocess, sys, threading, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork() with threads alive
info = {"agent_loaded": "_agent" in sys.modules,
        "chained": getattr(sys, "_isc_chained", False),
        "pid": os.getpid()}

def target():
    return 1

def child_fn():
    return 2

def mp_fn():
    return 3

def thread_target():
    return 4

def thread_fn():
    for _ in range(100):
        thread_target()

def mp_loop():
    for _ in range(55):
        mp_fn()

for _ in range(1000):
    target()
lst = []
for i in range(10000):
    lst.append(i)

threads = [threading.Thread(target=thread_fn, name="worker-%d" % i) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()

from inferscope import scope, mark, mark_event
with scope("step"):
    mark("tokens", n=128)
    mark_event("neg", -5)

@scope("deco")
def decorated():
    return 5

for _ in range(3):
    decorated()
for _ in range(5):
    with scope("iter"):
        pass
info["decorated_name"] = decorated.__name__

pid = os.fork()
if pid == 0:
    for _ in range(77):
        child_fn()
    os._exit(0)
os.waitpid(pid, 0)
info["fork_child"] = pid

import multiprocessing
p = multiprocessing.get_context("fork").Process(target=mp_loop)
p.start()
p.join()
info["mp_child"] = p.pid

sub = subprocess.run([sys.executable, "-c", "import os\ndef sub_fn(): pass\nsub_fn()\nprint(os.getpid())"],
                     stdout=subprocess.PIPE, check=True)
info["subprocess"] = int(sub.stdout)

if os.environ.get("WITH_TORCH"):
    import torch
    a = torch.ones(4, 4)
    b = torch.ones(4, 4)
    for _ in range(50):
        torch.matmul(a, b)
        a.add(b)
    ds = torch.utils.data.TensorDataset(torch.arange(64.0))
    for batch in torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2):
        pass
    info["torch_threads"] = [torch.get_num_threads(), torch.get_num_interop_threads()]
    v = [int(x) for x in torch.__version__.split("+")[0].split(".")[:3] if x.isdigit()] + [0, 0, 0]
    info["versions"] = [v[0] * 10000 + v[1] * 100 + v[2], sys.hexversion]

if info["agent_loaded"]:
    import _agent
    info["stats"] = _agent.stats()
print(json.dumps(info))
'''

BUSY = r'''
import json, os, sys
def f():
    return 1
for _ in range(int(sys.argv[1])):
    f()
import _agent
print(json.dumps({"pid": os.getpid(), "stats": _agent.stats()}))
'''


def py_version(py):
    out = subprocess.check_output([py, "-c", "import sys; print('%d %d' % sys.version_info[:2])"])
    return tuple(int(x) for x in out.split())


def interpreters():
    """Every CPython 3.9+ found: pyenv's versions, /usr/bin/python3.N and
    /usr/bin/python3 (last: the one with torch on Debian), each binary once."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands = sorted(glob.glob(os.path.join(pyenv, "versions", "*", "bin", "python3")))
    cands += sorted(p for p in glob.glob("/usr/bin/python3.*") if re.match(r".*/python3\.\d+$", p))
    found, seen = [], set()
    for p in cands + ["/usr/bin/python3"]:
        real = os.path.realpath(p)
        if real in seen or not os.access(p, os.X_OK):
            continue
        try:
            if py_version(p) < (3, 9):
                continue
        except (OSError, subprocess.CalledProcessError):
            continue
        seen.add(real)
        found.append(p)
    usr = [p for p in found if os.path.realpath(p) == os.path.realpath("/usr/bin/python3")]
    return [p for p in found if p not in usr] + ["/usr/bin/python3"] * bool(usr)


def torch_python():
    for py in ("python3", "/usr/bin/python3"):
        exe = shutil.which(py)
        if exe and subprocess.call([exe, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) == 0:
            return exe
    return None


def env_for(pydir, session, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("INFERSCOPE_"):
            del env[k]
    env["PYTHONPATH"] = pydir + (os.pathsep + extra.pop("PATH_AFTER") if "PATH_AFTER" in extra else "")
    if session is not None:
        env["INFERSCOPE_SESSION"] = session
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(py, script, env, args=()):
    r = subprocess.run([py, "-c", script] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    return r


def shm_files(session):
    return {int(os.path.basename(f)[:-4]): f for f in glob.glob(os.path.join(session, "*.shm"))}


def check_main(tap, py, pydir, chain_dir, torch_too):
    tag = "%s:" % py
    session = tempfile.mkdtemp(prefix="isc-agent-")
    try:
        env = env_for(pydir, session, INFERSCOPE_RING_KB=16384, INFERSCOPE_SLOTS=16,
                      PATH_AFTER=chain_dir, **({"WITH_TORCH": "1"} if torch_too else {}))
        r = run(py, WORKLOAD, env)
        if not tap.ok(r.returncode == 0 and r.stdout.strip(), tag + " workload runs",
                      r.stderr.decode(errors="replace")[-3000:]):
            return
        info = json.loads(r.stdout.decode().strip().splitlines()[-1])
        tap.ok(r.stderr == b"", tag + " nothing on stderr", r.stderr.decode(errors="replace")[-2000:])
        tap.ok(info["agent_loaded"] and info["chained"], tag + " sitecustomize loads _agent and chains")
        files = shm_files(session)
        try:
            shm = {pid: Shm(f) for pid, f in files.items()}
        except BadData as e:
            tap.ok(False, tag + " shm files decode", e)
            return
        tap.ok(True, tag + " shm files decode (%d files)" % len(shm))
        parent = shm.get(info["pid"])
        if not tap.ok(parent is not None, tag + " parent <pid>.shm exists"):
            return
        p = parent.proc
        tap.ok(p["state"] == PROC_EXITED and p["ppid"] == os.getpid() and p["start_ts"] > 0 and
               parent.cmdline[0] == py.encode(), tag + " header: state EXITED, ppid, start_ts, cmdline",
               (p["state"], p["ppid"], parent.cmdline))
        tap.ok(parent.count(PY_CALL, "target") == 1000, tag + " PY_CALL target x1000",
               parent.count(PY_CALL, "target"))
        missing = [i for s in shm.values() for i in s.ids_used() if i not in s.strings]
        tap.ok(not missing, tag + " every id used is defined", missing[:10])
        appends = [i for i, d in parent.strings.items() if d[2] == "list.append"]
        tap.ok(len(appends) == 1 and parent.count(C_CALL, "list.append") >= 10000,
               tag + " list.append defined once, called 10000+ times",
               (appends, parent.count(C_CALL, "list.append")))
        own = [d[2] for d in parent.strings.values() if d[0] == STR_CFUNC and
               d[2].split(".")[0] in ("_agent", "Scope", "scope")]
        tap.ok(not own, tag + " the agent's own functions are not recorded", own)
        workers = [s for s in parent.slots if s["name"].startswith("worker-")]
        tb = {s["records"][0][3].decode() for s in parent.slots
              if s["records"] and s["records"][0][0] == THREAD_BEGIN}
        tap.ok(len(parent.slots) >= 5 and len(workers) == 4 and
               all(s["state"] == SLOT_EXITED and s["records"][-1][0] == THREAD_END and
                   sum(1 for r in s["records"] if r[0] == PY_CALL and
                       parent.name(r[2][0]) == "thread_target") == 100 for s in workers) and
               {"MainThread", "worker-0", "worker-3"} <= tb,
               tag + " 4 threads: own slots, named, 100 calls each, THREAD_END + EXITED",
               [(s["name"], s["state"], len(s["records"])) for s in parent.slots])
        main = parent.slots[0]
        # CALIBRATION right after THREAD_BEGIN: mechanism, per_event_ps, calls,
        # plain_ns, hooked_ns, events; a hooked round records 2 events per
        # call plus the loop's own call and return
        cal = main["records"][1] if len(main["records"]) > 1 else (None, None, [0] * 6, b"")
        mech = 2 if py_version(py) >= (3, 12) else 1
        f = cal[2]
        tap.ok(cal[0] == CALIBRATION and f[0] == mech and f[2] == 5000 and f[5] == 2 * f[2] + 2 and
               0 < f[3] < f[4] and f[1] == (f[4] - f[3]) * 1000 // f[5],
               tag + " CALIBRATION after THREAD_BEGIN: mechanism %d, per-event cost from its timings" % mech,
               main["records"][:2])
        tap.ok(main["state"] == SLOT_EXITED and main["records"][-1][0] == THREAD_END,
               tag + " main thread slot ended at exit", (main["state"], main["records"][-1:]))
        mk = [(parent.name(f[0]), unzigzag(f[1])) for t, _, f, _ in parent.all_records() if t == MARK]
        kinds = {d[2]: d[0] for d in parent.strings.values()}
        want = [("tokens", 128), ("neg", -5)]
        if torch_too:  # at exit, from torch itself; never without torch imported
            want += [("torch.num_threads", info["torch_threads"][0]),
                     ("torch.num_interop_threads", info["torch_threads"][1]),
                     ("torch.version", info["versions"][0]), ("python.hexversion", info["versions"][1])]
        tap.ok(mk == want and kinds.get("tokens") == STR_MARK,
               tag + " mark records with values" + (", torch thread counts at exit" if torch_too else ""),
               (mk, want))
        sb = [parent.name(f[0]) for t, _, f, _ in parent.all_records() if t == SCOPE_BEGIN]
        tap.ok(sb == ["step"] + ["deco"] * 3 + ["iter"] * 5 and parent.count(SCOPE_END) == 9 and
               kinds.get("step") == STR_SCOPE and info["decorated_name"] == "decorated",
               tag + " scope records (with, decorator)", sb)
        ok = True
        for s in parent.slots:
            ts = [r[1] for r in s["records"]]
            ok = ok and ts == sorted(ts) and (not ts or ts[0] >= p["start_ts"])
        tap.ok(ok, tag + " timestamps are monotonic per thread and after start_ts")
        st = info["stats"]
        tap.ok(st["dropped"] == 0 and st["slot_dropped"] == 0 and st["str_dropped"] == 0 and
               all(s["dropped"] == 0 for s in parent.slots) and
               0 < st["events"] <= sum(len(s["records"]) for s in parent.slots),
               tag + " no drops; stats() counts the records", (st, [len(s["records"]) for s in parent.slots]))
        child = shm.get(info["fork_child"])
        tap.ok(child is not None and child.proc["ppid"] == info["pid"] and
               child.count(PY_CALL, "child_fn") == 77 and child.count(PY_CALL, "target") == 0 and
               child.slots[0]["records"][0][0] == THREAD_BEGIN,
               tag + " os.fork child: own .shm, ppid, its own events only",
               child and (child.proc["ppid"], child.count(PY_CALL, "child_fn")))
        mp = shm.get(info["mp_child"])
        tap.ok(mp is not None and mp.proc["ppid"] == info["pid"] and mp.count(PY_CALL, "mp_fn") == 55,
               tag + " multiprocessing fork child: own .shm with its events",
               mp and (mp.proc["ppid"], mp.count(PY_CALL, "mp_fn")))
        sub = shm.get(info["subprocess"])
        tap.ok(sub is not None and sub.proc["ppid"] == info["pid"] and sub.count(PY_CALL, "sub_fn") == 1,
               tag + " subprocess (fork+exec) python: own .shm with its events",
               sub and (sub.proc["ppid"], sub.count(PY_CALL, "sub_fn")))
        expected = {info["pid"], info["fork_child"], info["mp_child"], info["subprocess"]}
        if torch_too:
            expected |= set(pid for pid, s in shm.items() if s.count(PY_CALL, "_worker_loop") == 1)
        tap.ok(set(shm) == expected, tag + " no other .shm files (none for exec'd children)",
               (sorted(shm), sorted(expected)))
        if torch_too:
            names = {d[2] for d in parent.strings.values() if d[0] == STR_CFUNC}
            tap.ok(parent.count(C_CALL, "torch.matmul") == 50 and parent.count(C_CALL, "Tensor.add") == 50,
                   tag + " torch.matmul and Tensor.add recorded by name x50",
                   sorted(n for n in names if "torch" in n or "Tensor" in n)[:40])
            loaders = [s for pid, s in shm.items() if s.proc["ppid"] == info["pid"] and
                       s.count(PY_CALL, "_worker_loop") == 1]
            tap.ok(len(loaders) == 2, tag + " 2 DataLoader workers recorded in their own files",
                   [(pid, s.proc["ppid"]) for pid, s in shm.items()])
    finally:
        shutil.rmtree(session, ignore_errors=True)


def check_torch_stub(tap, py, pydir):
    """A torch module that raises: its thread marks are left out, nothing else changes."""
    session = tempfile.mkdtemp(prefix="isc-agent-")
    script = ("import os, sys, types\n"
              "m = types.ModuleType('torch')\n"
              "def broken(): raise RuntimeError('broken')\n"
              "def interop(): return 5\n"
              "m.get_num_threads = broken\n"
              "m.get_num_interop_threads = interop\n"
              "sys.modules['torch'] = m\n"
              "print(os.getpid())")
    try:
        r = run(py, script, env_for(pydir, session))
        try:
            shm = Shm(shm_files(session)[int(r.stdout)])
            mk = [(shm.name(f[0]), unzigzag(f[1])) for t, _, f, _ in shm.all_records() if t == MARK]
            ok = (r.returncode == 0 and r.stderr == b"" and mk == [("torch.num_interop_threads", 5)] and
                  shm.count(PY_CALL, "interop") == 0 and shm.slots[0]["records"][-1][0] == THREAD_END)
            diag = (r.returncode, r.stderr, mk, shm.count(PY_CALL, "interop"))
        except (BadData, KeyError, ValueError) as e:
            ok, diag = False, (e, r.stdout, r.stderr)
        tap.ok(ok, py + ": torch that raises at exit: that mark left out, its calls not recorded, clean exit", diag)
    finally:
        shutil.rmtree(session, ignore_errors=True)


def check_disabled(tap, py, pydir):
    session = tempfile.mkdtemp(prefix="isc-agent-")
    try:
        r = run(py, "import sys, inferscope\n"
                    "with inferscope.scope('x'): inferscope.mark('y', n=2)\n"
                    "print('_agent' in sys.modules, inferscope.enabled())",
                env_for(pydir, session, INFERSCOPE_ENABLE="0"))
        tap.ok(r.returncode == 0 and r.stdout.strip() == b"False False" and not os.listdir(session)
               and r.stderr == b"", py + ": INFERSCOPE_ENABLE=0 creates nothing, loads nothing",
               (r.stdout, r.stderr, os.listdir(session)))
        r = run(py, "import sys, inferscope\nprint('_agent' in sys.modules)", env_for(pydir, None))
        tap.ok(r.returncode == 0 and r.stdout.strip() == b"False" and r.stderr == b"",
               py + ": no INFERSCOPE_SESSION: agent not imported", (r.stdout, r.stderr))
        bad = os.path.join(session, "missing")
        r = run(py, "print('ran')", env_for(pydir, bad))
        tap.ok(r.returncode == 0 and r.stdout.strip() == b"ran" and
               r.stderr.decode().startswith("inferscope: cannot attach:") and
               len(r.stderr.decode().splitlines()) == 1,
               py + ": bad session: one warning line, workload runs", r.stderr)
    finally:
        shutil.rmtree(session, ignore_errors=True)


def check_tiny_ring(tap, py, pydir):
    session = tempfile.mkdtemp(prefix="isc-agent-")
    try:
        r = run(py, BUSY, env_for(pydir, session, INFERSCOPE_RING_KB=1), ["20000"])
        info = json.loads(r.stdout.decode().strip() or "{}")
        try:
            shm = Shm(shm_files(session)[info["pid"]])
            s = shm.slots[0]
            ok = (0 < info["stats"]["dropped"] <= s["dropped"] and
                  s["head"] - s["tail"] <= shm.proc["ring_size"] == 4096 and len(s["records"]) > 10)
            diag = (s["dropped"], s["head"], s["tail"], len(s["records"]))
        except (BadData, KeyError) as e:
            ok, diag = False, (e, r.stderr)
        tap.ok(ok, py + ": INFERSCOPE_RING_KB=1 gives the 4 KiB minimum; no consumer: drops counted, ring decodes",
               diag)
    finally:
        shutil.rmtree(session, ignore_errors=True)


BUSY_THREADS = r'''
import json, os, sys, threading
def f():
    return 1
def spin():
    for _ in range(int(sys.argv[1])):
        f()
for _ in range(2):
    t = threading.Thread(target=spin)
    t.start()
    t.join()
spin()
import _agent
print(json.dumps({"pid": os.getpid(), "stats": _agent.stats()}))
'''


def check_big_rings(tap, py, pydir):
    """INFERSCOPE_BIG_RING_KB: the first INFERSCOPE_BIG_RINGS slots get the
    big ring, the others the ordinary one; the file is sized for exactly
    that; with no consumer each ring fills to its own size."""
    session = tempfile.mkdtemp(prefix="isc-agent-")
    try:
        r = run(py, BUSY_THREADS, env_for(pydir, session, INFERSCOPE_RING_KB=4, INFERSCOPE_BIG_RING_KB=16,
                                          INFERSCOPE_BIG_RINGS=1, INFERSCOPE_SLOTS=4), ["20000"])
        info = json.loads(r.stdout.decode().strip() or "{}")
        try:
            shm = Shm(shm_files(session)[info["pid"]])
            p = shm.proc
            used = [s["head"] - s["tail"] for s in shm.slots]
            ok = (p["nbig"] == 1 and p["big_ring_size"] == 16384 and p["ring_size"] == 4096 and
                  p["file_size"] == p["ring_off"] + 16384 + 3 * 4096 and len(shm.slots) == 3 and
                  16384 - 128 <= used[0] <= 16384 and all(4096 - 128 <= u <= 4096 for u in used[1:]) and
                  all(s["dropped"] > 0 and len(s["records"]) > 10 for s in shm.slots))
            diag = (p["nbig"], p["big_ring_size"], p["ring_size"], p["file_size"], p["ring_off"], used)
        except (BadData, KeyError) as e:
            ok, diag = False, (e, r.stderr)
        tap.ok(ok, py + ": big rings: slot 0 has 16 KiB, slots 1-2 have 4 KiB, each fills to its size", diag)
    finally:
        shutil.rmtree(session, ignore_errors=True)


def check_limits(tap, py, pydir):
    """Slots and string area running out: counted, never fatal."""
    session = tempfile.mkdtemp(prefix="isc-agent-")
    script = ("import threading\n"
              "def f(i): return i\n"
              "def work():\n"
              "    for i in range(200): exec('def g%d(): pass\\ng%d()' % (i, i))\n"
              "ts = [threading.Thread(target=work) for _ in range(4)]\n"
              "[t.start() for t in ts]; [t.join() for t in ts]\n"
              "work()\n"
              "import _agent; print(_agent.stats())")
    try:
        r = run(py, script, env_for(pydir, session, INFERSCOPE_SLOTS=2, INFERSCOPE_STR_KB=4))
        files = list(shm_files(session).values())
        try:
            shm = Shm(files[0])
            p = shm.proc
            used = shm.ids_used()
            ok = (r.returncode == 0 and len(files) == 1 and p["nslots"] == 2 and p["nslots_used"] == 2 and
                  p["slot_dropped"] > 0 and p["str_dropped"] > 0 and 0 in used and
                  all(i in shm.strings for i in used if i) and p["str_committed"] <= p["str_size"])
            diag = (r.stdout, r.stderr[-500:], p["nslots_used"], p["slot_dropped"], p["str_dropped"])
        except (BadData, IndexError) as e:
            ok, diag = False, (e, r.stderr[-1000:])
        tap.ok(ok, py + ": 2 slots, 4 KiB strings: slot and string drops counted, id 0 for undefined",
               diag)
    finally:
        shutil.rmtree(session, ignore_errors=True)


def check_live_drain(tap, py, pydir):
    """A consumer like the recorder's drain thread: checks wraparound, drops,
    and that ids are defined before records using them are visible."""
    session = tempfile.mkdtemp(prefix="isc-agent-")
    proc = subprocess.Popen([py, "-c", BUSY, "300000"], env=env_for(pydir, session, INFERSCOPE_RING_KB=4),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    errors = []
    drained = {}
    try:
        path = os.path.join(session, "%d.shm" % proc.pid)
        deadline = time.time() + 60
        # The agent creates the file, then sizes it, then writes magic last.
        while (not os.path.exists(path) or os.path.getsize(path) < SLOTS_OFF) and time.time() < deadline:
            time.sleep(0.001)
        with open(path, "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
        # Shared counters go through memoryview casts: one 4/8-byte load or
        # store each, where struct would tear them into single bytes.
        u32 = memoryview(m).cast("I")
        u64 = memoryview(m).cast("Q")
        while u32[0] != SHM_MAGIC:
            time.sleep(0.001)
        p = dict(zip(PROC_FIELDS, PROC.unpack_from(m, 0)))
        rs = p["ring_size"]
        finished = False
        while True:
            finished = finished or proc.poll() is not None
            nslots = u32[64 // 4]
            for i in range(nslots):
                so = SLOTS_OFF + i * SLOT_SIZE
                tail = u64[(so + SLOT_TAIL_OFF) // 8]
                head = u64[(so + SLOT_HEAD_OFF) // 8]
                if head - tail > ring_len(p, i):
                    errors.append("slot %d: head-tail > ring" % i)
                    continue
                chunk = ring_bytes(m, p, i, tail, head)
                committed = u64[72 // 8]
                strs = string_defs(m[p["str_off"]:p["str_off"] + committed])
                try:
                    for t, _, fl, _ in records(chunk):
                        if t in (PY_CALL, C_CALL, SCOPE_BEGIN, MARK) and fl[0] not in strs:
                            errors.append("id %d visible before its definition" % fl[0])
                except BadData as e:
                    errors.append("slot %d chunk: %s" % (i, e))
                drained[i] = drained.get(i, b"") + chunk
                u64[(so + SLOT_TAIL_OFF) // 8] = head
            if finished:
                break
            time.sleep(0.0002)
        out, err = proc.communicate()
        u32.release()
        u64.release()
        m.close()
        info = json.loads(out.decode().strip() or "{}")
        shm = Shm(path, drained={i: b"" for i in drained})
        recs = [r for i in sorted(drained) for r in records(drained[i])]
        calls = sum(1 for r in recs if r[0] == PY_CALL and shm.name(r[2][0]) == "f")
        s0 = shm.slots[0]
        ok = (not errors and s0["dropped"] > 0 and s0["head"] > 4 * rs and s0["head"] == s0["tail"] and
              calls > 1000)
        diag = (errors[:5], s0["dropped"], s0["head"], calls, err[-500:])
    except Exception as e:
        proc.kill()
        ok, diag = False, repr(e)
    finally:
        shutil.rmtree(session, ignore_errors=True)
    tap.ok(ok, py + ": 4 KiB ring with a live consumer: wraps, drops, decodes, ids defined first", diag)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: check_shm.py PYDIR\n")
        return 2
    pydir = os.path.abspath(sys.argv[1])
    tap = Tap()
    pys = interpreters()
    tpy = torch_python()
    chain_dir = tempfile.mkdtemp(prefix="isc-chain-")
    with open(os.path.join(chain_dir, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys._isc_chained = True\n")
    try:
        for py in pys:
            check_main(tap, py, pydir, chain_dir, torch_too=(os.path.realpath(py) == os.path.realpath(tpy or "")))
        for py in pys:
            check_disabled(tap, py, pydir)
        check_torch_stub(tap, pys[-1], pydir)
        for py in pys:
            check_tiny_ring(tap, py, pydir)
            check_big_rings(tap, py, pydir)
            check_limits(tap, py, pydir)
        for py in pys[-2:]:
            check_live_drain(tap, py, pydir)
    finally:
        shutil.rmtree(chain_dir, ignore_errors=True)
    if tpy is None:
        tap.n += 1
        print("ok %d - torch checks # SKIP no interpreter with torch (python3-torch)" % tap.n)
    print("1..%d" % tap.n)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
