#!/usr/bin/env python3
"""How busy the machine was around a recording, measured from outside it.

    runqueue.py PID OUT [INTERVAL_S]

Samples, every INTERVAL_S (default 0.1 s) until process PID has exited:
  * the threads the kernel has runnable (/proc/stat procs_running), less
    the runnable threads of PID and its descendants (their
    /proc/TID/stat state R) and less this sampler itself: the *other*
    runnable threads, which compete with the recording for the CPUs;
  * the CPU pressure (/proc/pressure/cpu "some" total) at the first and
    the last sample.
and writes one JSON object to OUT:
  {"samples", "ncpu", "external_runnable_mean", "external_runnable_max",
   "own_runnable_mean", "psi_some_pct" (null without PSI), "seconds"}

A test whose premise is a quiet CPU (its workload's own threads, and not
someone else's, decide what the recording shows) reads
external_runnable_mean, the premise measured on the machine, not on what
the program under test wrote, and skips saying "MACHINE ASSUMPTION NOT
MET: ..." with the figure when it does not hold (tests/README.md). The
pressure (PSI) counts the workload's own waits too (a workload with more
threads than CPUs makes its own), so it is reported, not used for that.
Exit status 0, 2 on usage.
"""
import json
import os
import sys
import time


def procs_running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    return 0


def psi_total():
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1])
    except OSError:
        pass
    return None


def stat_fields(path):
    """(state, ppid) of a /proc/.../stat file, or None when it is gone."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rfind(")") + 2:].split()
    return rest[0], int(rest[1])


def tree(root):
    """PID and its descendants (processes): from /proc/PID/task/TID/children
    where the kernel has it (cheap), else from every process's parent."""
    out, todo = [], [root]
    try:
        while todo:
            p = todo.pop()
            out.append(p)
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
        return out
    except FileNotFoundError as e:
        if not e.filename or not e.filename.endswith("/children"):
            return out  # the process went away meanwhile
    except OSError:
        return out
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = stat_fields("/proc/%s/stat" % d)
            if st:
                children.setdefault(st[1], []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def own_runnable(root):
    n = 0
    for p in tree(root):
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            st = stat_fields("/proc/%d/task/%s/stat" % (p, t))
            if st and st[0] == "R":
                n += 1
    return n


def alive(pid):
    st = stat_fields("/proc/%d/stat" % pid)
    return st is not None and st[0] not in ("Z", "X")


def main(argv):
    if len(argv) not in (3, 4) or not argv[1].isdigit():
        print("usage: runqueue.py PID OUT [INTERVAL_S]", file=sys.stderr)
        return 2
    pid, out = int(argv[1]), argv[2]
    interval = float(argv[3]) if len(argv) == 4 else 0.1
    ext, own = [], []
    psi0, t0 = psi_total(), time.monotonic()
    while alive(pid):
        mine = own_runnable(pid)
        total = procs_running()
        own.append(mine)
        ext.append(max(0, total - mine - 1))  # -1: this sampler, running now
        time.sleep(interval)
    psi1, t1 = psi_total(), time.monotonic()
    n = len(ext)
    res = {
        "samples": n,
        "ncpu": os.cpu_count() or 1,
        "external_runnable_mean": round(sum(ext) / n, 2) if n else None,
        "external_runnable_max": max(ext) if n else None,
        "own_runnable_mean": round(sum(own) / n, 2) if n else None,
        "psi_some_pct": round(100 * (psi1 - psi0) / ((t1 - t0) * 1e6), 1) if psi0 is not None and t1 > t0 else None,
        "seconds": round(t1 - t0, 2),
    }
    with open(out, "w") as f:
        json.dump(res, f)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
