"""Planted truth: the main thread's steps wait for a lock another thread holds.

Each of 25 steps (scope "step") computes 2 ms in Python, then takes the
lock `lock`, which the thread "holder" keeps for 40 ms at a time while it
sleeps (it lets go for 0.5 ms between holds).  So about 95 % of a step is
the main thread blocked in the lock's acquisition (a futex wait: off-CPU
reason thread_wait) on the line `with lock:` of the step loop, and the
holder is off-CPU in time.sleep (reason sleep) meanwhile.

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
stop = False


def holder():
    while not stop:
        with lock:
            time.sleep(0.04)
        time.sleep(0.0005)


def compute(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


t = threading.Thread(target=holder, name="holder")
t.start()
time.sleep(0.01)
for step in range(25):
    with scope("step"):
        compute(2)
        with lock:
            pass
stop = True
t.join()
