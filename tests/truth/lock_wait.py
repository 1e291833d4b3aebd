"""Planted truth: the main thread's steps wait for a lock another thread holds.

Each of 25 steps (scope "step") computes 2 ms in Python, then asks the
thread "holder" to take the lock `lock` (the event `go`), waits until it
holds it (the event `held`), and takes the lock itself: the holder keeps
it for 40 ms while it sleeps.  So every step, by construction (not by how
the threads happen to be scheduled: an earlier version raced for the lock
and most steps never waited), is about 2 ms of computing and 40 ms of the
main thread blocked in the lock's acquisition (a futex wait: off-CPU
reason thread_wait) on the line `with lock:` of the step loop, while the
holder is off-CPU in time.sleep (reason sleep).

Expected, by construction: verdict lock_wait (not io_wait: the step's
thread waits on another thread, not on I/O; not unknown); the lock_wait
finding names the module's step loop in this file as where it waited.
"""
import threading
import time

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

lock = threading.Lock()
go = threading.Event()
held = threading.Event()
stop = False


def holder():
    while True:
        go.wait()
        go.clear()
        if stop:
            return
        with lock:
            held.set()
            time.sleep(0.04)


def compute(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


t = threading.Thread(target=holder, name="holder")
t.start()
for step in range(25):
    with scope("step"):
        compute(2)
        held.clear()
        go.set()
        held.wait()
        with lock:
            pass
stop = True
go.set()
t.join()
