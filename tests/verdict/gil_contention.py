"""verdict workload, ground truth: gil_contention.

A "tokenizer service" that runs pure-Python work in threads: the main
thread and more worker threads, 4 x os.cpu_count() in all (at least 8,
at most 64: 8 on a 2-CPU machine), each run `tokenize`, a per-character
Python loop with no C call that releases the GIL. Only one thread runs
bytecode at a time; the others wait for the GIL in a futex inside
CPython's take_gil, with no C call open (the agent's stack ends in
Python code), so each waits about 7/8 of its traced time whatever the
number of CPUs. A waiter wakes when its timed wait on the GIL runs out
(the switch interval) to ask the holder to drop it; on a loaded machine
it then waits for a CPU, runnable, before it can wait again (measured
under a load average of 14 on 2 CPUs with the default 5 ms interval: 5.2
runnable threads of 8 on average, most of the off-CPU time preempted, so
thread_contention won once in two runs). The service sets a 0.2 s switch
interval (sys.setswitchinterval, as services that favour throughput do),
so the waiters wake 5 times a second and stay blocked on the GIL: the
measurement then does not depend on the machine's load.
Top contributor: tokenize (the Python function that waited).
Every request is a `scope("step")`, on the workers as on the main thread,
as a service instruments its requests: the iterations are where the
threads wait (the verdict judges the time inside iterations, issue 18).

Usage: gil_contention.py [STEPS]  (default 6 steps on the main thread,
more until all threads have run together for 1.5 s; the workers run
until the main thread is done)
"""

import os
import sys
import threading
import time

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

TEXT = "the quick brown fox jumps over the lazy dog " * 400


def tokenize(text):
    """Splits text into words character by character: all interpreter work."""
    words = 0
    cur = 0
    for ch in text:
        if ch == " ":
            if cur:
                words += 1
            cur = 0
        else:
            cur += 1
    return words


def worker(stop):
    while not stop.is_set():
        with scope("step"):  # one request of the service, on any thread
            tokenize(TEXT)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    nthreads = min(64, max(8, 4 * (os.cpu_count() or 1)))
    sys.setswitchinterval(0.2)
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(stop,), name="tokenizer-%d" % i)
               for i in range(nthreads - 1)]
    for t in threads:
        t.start()
    all_started = time.monotonic()
    words = 0
    # the main thread's steps, then more until every thread has run 1.5 s
    # beside all the others: each thread starts only once the one before
    # it got the GIL, so the last one starts seconds late and, without
    # this, could live for less than a sampler period (its GIL waits
    # then unseen), the more so the faster the recording lets Python run
    i = 0
    while i < steps or time.monotonic() - all_started < 1.5:
        with scope("step"):
            for _ in range(10):
                words += tokenize(TEXT)
        i += 1
    stop.set()
    for t in threads:
        t.join()
    print("gil_contention.py: %d steps, %d threads, %d words" % (steps, nthreads, words))


if __name__ == "__main__":
    main()
