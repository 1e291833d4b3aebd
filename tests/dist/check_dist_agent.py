#!/usr/bin/env python3
"""The agent's torch.distributed part (inferscope/_dist.py) on its own: a
stand-in agent that logs what it is asked to write, and a stand-in
distributed_c10d module whose functions have torch's signatures, so that
the records each call makes are known by construction.  TAP output.

    check_dist_agent.py AGENT_PYDIR
"""
import os
import sys


class Agent(object):
    def __init__(self):
        self.log = []

    def mark(self, name, n=1):
        self.log.append(("mark", name, n))

    def scope_begin(self, name):
        self.log.append(("begin", name))

    def scope_end(self):
        self.log.append(("end",))


class Tensor(object):
    def __init__(self, n, dtype="torch.float32", size=4):
        self.n, self.dtype, self.size = n, dtype, size

    def numel(self):
        return self.n

    def element_size(self):
        return self.size


class C10d(object):
    """Stand-in for torch.distributed.distributed_c10d (torch 1.13 signatures)."""

    class GroupMember(object):
        WORLD = object()

    def __init__(self):
        self.calls = []
        self.sub = object()
        c = self

        def init_process_group(backend, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                               group_name="", pg_options=None):
            c.calls.append("init")

        def all_reduce(tensor, op=None, group=None, async_op=False):
            c.calls.append("all_reduce")

        def all_gather(tensor_list, tensor, group=None, async_op=False):
            c.calls.append("all_gather")

        def barrier(group=None, async_op=False, device_ids=None):
            c.calls.append("barrier")
        self.init_process_group, self.all_reduce, self.all_gather, self.barrier = \
            init_process_group, all_reduce, all_gather, barrier

    def get_rank(self):
        return 1

    def get_world_size(self):
        return 4

    def get_backend(self, group=None):
        return "nccl" if group is self.sub else "gloo"


def main(pydir):
    sys.path.insert(0, pydir)
    os.environ.pop("INFERSCOPE_SESSION", None)  # inferscope's own agent stays unloaded
    from inferscope import _dist
    n, bad = 0, 0

    def ok(cond, what, got=None):
        nonlocal n, bad
        n += 1
        bad += not cond
        print("%s %d - %s%s" % ("ok" if cond else "not ok", n, what, "" if cond else "  # got %r" % (got,)))

    # the environment, as torchrun and Slurm set it
    for k in list(os.environ):
        if k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                 "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                 "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
            del os.environ[k]
    a = Agent()
    _dist.env_marks(a)
    ok(a.log == [], "no rank in the environment: no marks", a.log)
    os.environ.update(SLURM_PROCID="5", SLURM_NTASKS="8", SLURM_LOCALID="1", SLURM_JOB_ID="77", SLURM_STEP_ID="0")
    a = Agent()
    _dist.env_marks(a)
    import zlib
    job = zlib.crc32(b"SLURM_JOB_ID=77.0") & 0xffffffff
    ok(a.log == [("mark", "dist.env.rank", 5), ("mark", "dist.env.world_size", 8), ("mark", "dist.env.local_rank", 1),
                 ("mark", "dist.env.job", job)], "Slurm's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, job id", a.log)
    os.environ.update(RANK="2", WORLD_SIZE="4", LOCAL_RANK="0", MASTER_ADDR="h", MASTER_PORT="9")
    a = Agent()
    _dist.env_marks(a)
    ok(a.log[:3] == [("mark", "dist.env.rank", 2), ("mark", "dist.env.world_size", 4),
                     ("mark", "dist.env.local_rank", 0)], "RANK, WORLD_SIZE, LOCAL_RANK before Slurm's", a.log)

    a, c = Agent(), C10d()
    _dist.patch(a, c)
    _dist.patch(a, c)  # once only
    c.init_process_group("gloo", "tcp://h:9", rank=1, world_size=4)
    ok(c.calls == ["init"], "init_process_group called once", c.calls)
    ok(a.log[:3] == [("mark", "dist.rank", 1), ("mark", "dist.world_size", 4), ("mark", "dist.backend.gloo", 1)],
       "init: dist.rank, dist.world_size, dist.backend.gloo", a.log)
    ok(("mark", "dist.local_rank", 0) in a.log, "init: dist.local_rank from LOCAL_RANK", a.log)
    ok(("mark", "dist.job", zlib.crc32(b"tcp://h:9/4") & 0xffffffff) in a.log, "init: dist.job of the init method",
       a.log)
    a.log[:] = []
    c.all_reduce(Tensor(128))
    c.all_gather([Tensor(16), Tensor(16)], Tensor(16, "torch.bfloat16", 2))
    c.barrier()
    c.all_reduce(Tensor(8), None, c.sub)  # a sub-group, given by position
    c.all_reduce(Tensor(8), group=c.sub)
    ok(a.log == [("begin", "gloo:all_reduce"), ("mark", "dist.pg", 0), ("mark", "dist.seq", 1),
                 ("mark", "dist.bytes.float32", 512), ("end",),
                 ("begin", "gloo:all_gather"), ("mark", "dist.pg", 0), ("mark", "dist.seq", 2),
                 ("mark", "dist.bytes.bfloat16", 32), ("end",),
                 ("begin", "gloo:barrier"), ("mark", "dist.pg", 0), ("mark", "dist.seq", 3), ("end",),
                 ("begin", "nccl:all_reduce"), ("mark", "dist.bytes.float32", 32), ("end",),
                 ("begin", "nccl:all_reduce"), ("mark", "dist.bytes.float32", 32), ("end",)],
       "collectives: scopes BACKEND:OP, seq on the default group only, input bytes and type", a.log)
    ok(c.calls[1:] == ["all_reduce", "all_gather", "barrier", "all_reduce", "all_reduce"],
       "each collective called once, with its arguments", c.calls)

    def boom(tensor, op=None, group=None, async_op=False):
        raise RuntimeError("boom")
    c2, a2 = C10d(), Agent()
    c2.all_reduce = boom
    _dist.patch(a2, c2)
    try:
        c2.all_reduce(Tensor(1))
        raised = False
    except RuntimeError:
        raised = True
    ok(raised and a2.log[-1] == ("end",), "a collective that raises: the exception passes, the scope is closed",
       a2.log)
    print("1..%d" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
