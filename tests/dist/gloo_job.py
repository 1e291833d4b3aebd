#!/usr/bin/env python3
"""A small torch.distributed job on this machine (gloo, localhost), with a
planted straggler, for the recorded-job tests of tests/dist/recorded.bats.

    gloo_job.py launch N STEPS SLOW_MS WHO OUT
                                    the launcher: starts N rank processes
                                    (children of this one, rank and world
                                    size on their command line), waits
    gloo_job.py rank R N PORT STEPS SLOW_MS WHO OUT
                                    one rank, torch.distributed initialised
                                    from its arguments (tcp://127.0.0.1:PORT)
    gloo_job.py env STEPS SLOW_MS WHO OUT
                                    one rank as torchrun starts it: RANK,
                                    WORLD_SIZE, MASTER_ADDR, MASTER_PORT
                                    (init from env://)
    gloo_job.py spawn N STEPS SLOW_MS WHO OUT
                                    the launcher as the issue's job had it:
                                    torch.multiprocessing.spawn starts the N
                                    ranks (and Python's resource tracker)
    gloo_job.py port                prints a free TCP port of 127.0.0.1

Each step (an inferscope scope "step"): the rank WHO (a number), or every
rank (WHO "all": the balanced twin), runs slow_preprocess, SLOW_MS ms of
Python work by the wall clock; then every rank an MLP forward, an
all_reduce and an all_gather.  One warm-up barrier first.

Each rank writes OUT/rankR.json: the CLOCK_MONOTONIC time (ns,
time.perf_counter_ns, the clock the recorder stamps with) at which it
called each collective (arrivals: [[name, ns], ...] in call order) and
slow_preprocess's measured durations (slow_ns).  These are the test's
independent truth: a rank's wait in a collective is the latest arrival of
any rank minus its own, computed from these files alone.
"""
import json
import os
import socket
import subprocess
import sys
import time

try:  # the iterations, under iscope-record (a no-op without it)
    from inferscope import scope
except ImportError:
    class scope(object):
        def __init__(self, name):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


def slow_preprocess(ms):
    """Pure Python work until ms milliseconds have passed (the straggler's
    extra work: wall-clock bounded, so a loaded machine does not stretch it)."""
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        for i in range(500):
            x = (x * 31 + i) % 1000003
    return x


def run_rank(rank, world, init_method, steps, slow_ms, who, out):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    if init_method:
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
    x = torch.randn(32, 128)
    arrivals, slow, left = [], [], []
    arrivals.append(["barrier", time.perf_counter_ns()])
    dist.barrier()
    with torch.no_grad():
        for _ in range(steps):
            with scope("step"):
                if slow_ms > 0 and who in ("all", str(rank)):
                    t0 = time.perf_counter_ns()
                    slow_preprocess(slow_ms)
                    slow.append(time.perf_counter_ns() - t0)
                y = model(x)
                s = y.sum(0)
                arrivals.append(["all_reduce", time.perf_counter_ns()])
                dist.all_reduce(s)
                parts = [torch.empty_like(s) for _ in range(world)]
                arrivals.append(["all_gather", time.perf_counter_ns()])
                dist.all_gather(parts, s)
                left.append(time.perf_counter_ns())
    dist.destroy_process_group()
    with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "world": world, "pid": os.getpid(), "arrivals": arrivals, "slow_ns": slow, "left": left}, f)


def _spawned(rank, world, port, steps, slow_ms, who, out):
    run_rank(rank, world, "tcp://127.0.0.1:%d" % port, steps, slow_ms, who, out)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main(argv):
    if argv[1:2] == ["launch"]:
        n, steps, slow_ms, who, out = int(argv[2]), argv[3], argv[4], argv[5], argv[6]
        port = str(free_port())
        env = {k: v for k, v in os.environ.items()
               if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
        procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "rank", str(r), str(n), port,
                                   steps, slow_ms, who, out], env=env) for r in range(n)]
        return max(p.wait() for p in procs)
    if argv[1:2] == ["spawn"]:
        import torch.multiprocessing as mp
        n = int(argv[2])
        mp.spawn(_spawned, args=(n, free_port(), int(argv[3]), float(argv[4]), argv[5], argv[6]), nprocs=n,
                 join=True)
        return 0
    if argv[1:2] == ["rank"]:
        run_rank(int(argv[2]), int(argv[3]), "tcp://127.0.0.1:" + argv[4], int(argv[5]), float(argv[6]), argv[7],
                 argv[8])
        return 0
    if argv[1:2] == ["env"]:
        run_rank(None, None, None, int(argv[2]), float(argv[3]), argv[4], argv[5])
        return 0
    if argv[1:2] == ["port"]:
        print(free_port())
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
