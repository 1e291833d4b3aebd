"""Fault-test workload with synchronisation points the tests can wait for.

    announce.py [--work K] [--exit N] [--stop PATH] [--handle 1] CALLS SYNC THEN

Calls f() CALLS times, then announces it: creates the file SYNC atomically
(write + rename) holding "pid=P session=S calls=CALLS events=E dropped=D"
(E and D: the agent's counters, -1 when not recorded).  Then THEN:

  spin   keep calling f() until killed, or until the file --stop appears;
         then a burst of 300000 more calls (enough to fill a 1 MiB ring
         nobody drains), write SYNC.done (same fields) and exit N
  block  wait inside one C call (select.select) until a signal comes: the
         signal's wakeup fd (signal.set_wakeup_fd, set before SYNC appears)
         is what it waits on, so a signal sent at any time after SYNC
         appears ends the wait (signal.pause, used before, blocked for
         ever when the signal landed between the announcement and the
         pause() system call: Python had run its handler check already)
  exit   exit with status N (default 0)

--handle 1 installs handlers for SIGINT, SIGTERM and SIGHUP that exit with
status 10 + the signal number (12, 25, 11); --handle ignore ignores the
three (SIG_IGN).  --work K makes each call of
f() do K loop iterations of arithmetic (no calls), to slow the event rate
down.  f is called exactly CALLS times before SYNC appears.
"""
import os
import select
import signal
import sys

try:
    import _agent
except ImportError:  # not recorded
    _agent = None

args = sys.argv[1:]
opts = {"--work": "0", "--exit": "0", "--stop": "", "--handle": "0"}
while args and args[0] in opts:
    opts[args[0]] = args[1]
    args = args[2:]
calls, sync, then = int(args[0]), args[1], args[2]
work = int(opts["--work"])
if opts["--handle"] == "1":
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(10 + signum))
elif opts["--handle"] == "ignore":
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def f(i):
    x = i
    for j in range(work):
        x += j
    return x


def announce(path):
    s = _agent.stats() if _agent and _agent.enabled() else None
    ev = s["events"] if s else -1
    dr = s["dropped"] + s["slot_dropped"] if s else -1
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write("pid=%d session=%s calls=%d events=%d dropped=%d\n"
                 % (os.getpid(), os.environ.get("INFERSCOPE_SESSION", ""), calls, ev, dr))
    os.rename(tmp, path)


if then == "block":
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)

for i in range(calls):
    f(i)
announce(sync)

if then == "spin":
    stop = opts["--stop"]
    n = 0
    while True:
        f(n)
        n += 1
        if n % 10000 == 0 and stop and os.path.exists(stop):
            break
    for i in range(300000):
        f(i)
    announce(sync + ".done")
    sys.exit(int(opts["--exit"]))
elif then == "block":
    while True:
        # the handler (if any) runs when select returns; an ignored
        # signal writes nothing
        select.select([wake_r], [], [])
        os.read(wake_r, 512)
else:
    sys.exit(int(opts["--exit"]))
