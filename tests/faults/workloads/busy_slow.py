"""Memory-bound workload: a busy thread and a slow one.

    busy_slow.py CALLS OUT

The main thread calls f() CALLS times as fast as it can (millions of
events a second); a second thread records one call every 0.3 s.  The slow
thread's few pending events are what holds a reader's reorder window open
(the recorder flushes them by age, or once 1 MiB of other records went
by), so this is the worst case for iscope-merge's memory.  At the end,
writes "events=E dropped=D" (the agent's counters) to OUT.
"""
import sys
import threading

import _agent

calls, out = int(sys.argv[1]), sys.argv[2]
done = threading.Event()


def tick():
    return 1


def slow():
    while not done.wait(0.3):
        tick()


def f(i):
    return i


t = threading.Thread(target=slow, name="slow")
t.start()
for i in range(calls):
    f(i)
done.set()
t.join()
s = _agent.stats()
with open(out, "w") as fh:
    fh.write("events=%d dropped=%d\n" % (s["events"], s["dropped"] + s["slot_dropped"]))
