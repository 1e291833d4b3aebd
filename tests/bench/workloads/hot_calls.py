"""Call-heavy: a tight loop of tiny Python calls, about 10 M events/s when
recorded in the exact mode (the drops check of tests/bench/overhead.sh)."""
import sys
import time


def f(x):
    return x


def loop(n):
    s = 0
    for i in range(n):
        s += f(i)
    return s


n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
t0 = time.perf_counter()
print(loop(n))
# 2 events per call (call, return): the event rate while the loop ran
sys.stderr.write("loop_events_per_s %d\n" % (2 * n / (time.perf_counter() - t0)))
