"""Ring-overflow workload with an exactly known number of events.

    overflow.py N OUT

Calls f() N times in one burst (2N events: call and return), then reads
the agent's counters and writes "events=E dropped=D" to OUT, and leaves
with os._exit(0).  After the counters are read the process makes exactly
the same few calls in every run (os.write, os._exit), so

    events + dropped in the trace == E + D + (the same small constant)

where the constant is measured by a run with a ring large enough to drop
nothing.  No threads, no atexit handlers: nothing else adds events.
"""
import os
import sys

import _agent

n, out = int(sys.argv[1]), sys.argv[2]
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)


def f(i):
    return i


for i in range(n):
    f(i)
s = _agent.stats()
os.write(fd, b"events=%d dropped=%d\n" % (s["events"], s["dropped"] + s["slot_dropped"]))
os._exit(0)
