"""verdict workload, ground truth: thread_contention (oversubscribed intra-op pools).

Several request threads each run a small MLP (1024 -> 2048 -> 1024,
batch 64) back to back, with torch.set_num_threads(8) copied from a
bigger machine: the main thread and max(2, os.cpu_count()) - 1 handler
threads (4 callers on 2 CPUs: max(4, 2 x os.cpu_count())). torch's
OpenMP backend gives every calling thread its own team of 8 threads, so
4 callers keep up to 32 threads busy on 2 CPUs. A caller's share of a
linear finishes, then it waits at the team's barrier (a futex, inside
torch._C._nn.linear) for workers that wait for a CPU: the callers are
mostly blocked, not preempted, which the old rules read as io_wait. The
OpenMP workers are not traced (named like the process, parked on their
team's futex): they count in the runnable threads (several times the
CPUs) and appear as cpu.thread_pools.
Top contributor: torch._C._nn.linear (or its caller, forward).

Usage: pool_contention.py [STEPS]  (default 15 steps of 4 requests on the
main thread; the handlers run until the main thread is done)
"""

import os
import sys
import threading

import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def forward(model, x):
    """One request: the MLP, run by this thread's intra-op team."""
    return model(x)


def handler(model, x, stop):
    with torch.inference_mode():
        while not stop.is_set():
            forward(model, x)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    callers = max(4, 2 * (os.cpu_count() or 1))
    torch.set_num_threads(8)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024))
    x = torch.randn(64, 1024)
    stop = threading.Event()
    threads = [threading.Thread(target=handler, args=(model, x, stop), name="handler-%d" % i)
               for i in range(callers - 1)]
    for t in threads:
        t.start()
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                for _ in range(4):
                    result += float(forward(model, x)[0, 0])
    stop.set()
    for t in threads:
        t.join()
    print("pool_contention.py: %d steps, %d callers, result %.3f" % (steps, callers, result))


if __name__ == "__main__":
    main()
