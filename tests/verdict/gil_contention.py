"""verdict workload, ground truth: gil_contention.

A "tokenizer service" that runs pure-Python work in threads: the main
thread and more worker threads, 4 x os.cpu_count() in all (at least 8,
at most 64: 8 on a 2-CPU machine), each run `tokenize`, a per-character
Python loop with no C call that releases the GIL. Only one thread runs
bytecode at a time; the others wait for the GIL in a futex inside
CPython's take_gil, with no C call open (the agent's stack ends in
Python code), so each waits about 7/8 of its traced time whatever the
number of CPUs. Only a few threads are runnable at once (the GIL holder,
the one being handed the GIL, waiters whose 5 ms timed wait ran out), so
even when a loaded machine preempts them (measured here under a load
average of 14 on 2 CPUs: 2.4 runnable threads on average with 4 threads)
most of the waiting is blocked on the GIL, not preemption: with 8
threads the GIL share stays the largest (thread_contention's preempted
share is the runner-up).
Top contributor: tokenize (the Python function that waited).

Usage: gil_contention.py [STEPS]  (default 12 steps on the main thread;
the workers run until the main thread is done)
"""

import os
import sys
import threading

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
        tokenize(TEXT)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    nthreads = min(64, max(8, 4 * (os.cpu_count() or 1)))
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(stop,), name="tokenizer-%d" % i)
               for i in range(nthreads - 1)]
    for t in threads:
        t.start()
    words = 0
    for _ in range(steps):
        with scope("step"):
            for _ in range(10):
                words += tokenize(TEXT)
    stop.set()
    for t in threads:
        t.join()
    print("gil_contention.py: %d steps, %d threads, %d words" % (steps, nthreads, words))


if __name__ == "__main__":
    main()
