"""Which rank this process is, and its torch.distributed collectives, as
the Python agent records them (formats/trace.md, "Names the agent writes").

sitecustomize.py calls ``env_marks`` at start and ``patch`` on
torch.distributed.distributed_c10d right after that module ran (before
torch.distributed copies its names), so that

- ``dist.env.rank``, ``dist.env.world_size``, ``dist.env.local_rank`` and
  ``dist.env.job`` come from the launcher's environment (RANK, LOCAL_RANK,
  WORLD_SIZE as torchrun sets them; Slurm's SLURM_PROCID, SLURM_LOCALID,
  SLURM_NTASKS; Open MPI's OMPI_COMM_WORLD_RANK, _LOCAL_RANK, _SIZE;
  PMI_RANK, PMI_SIZE);
- ``init_process_group``, once it returned, marks ``dist.rank``,
  ``dist.world_size``, ``dist.local_rank``, ``dist.backend.NAME`` and
  ``dist.job`` (a hash of the rendezvous every rank gives: the init method
  or MASTER_ADDR:MASTER_PORT, with the world size);
- each collective call (all_reduce, all_gather, broadcast, barrier, ...)
  is a scope ``BACKEND:OP`` ("gloo:all_reduce", the name the PyTorch
  profiler gives it), with ``dist.pg`` and ``dist.seq`` (the default
  group's calls, numbered from 1) and ``dist.bytes.DTYPE`` (this rank's
  input) marked inside it.

Nothing here may raise into the workload: a failure leaves the function
as torch wrote it.
"""
import os
import zlib

# environment variable -> mark, first match wins per mark
_ENV = (
    ("dist.env.rank", ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")),
    ("dist.env.world_size", ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")),
    ("dist.env.local_rank", ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")),
)

# what identifies the job in the environment, the first one present
_ENV_JOB = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "MASTER_ADDR")


def _env_int(names):
    for n in names:
        v = os.environ.get(n)
        if v is not None and v.strip().isdigit():
            return int(v.strip())
    return None


def _job_hash(text):
    """A nonzero 32-bit number every rank of one job computes alike."""
    return (zlib.crc32(text.encode("utf-8", "replace")) & 0xffffffff) or 1


def _env_job():
    for n in _ENV_JOB:
        v = os.environ.get(n)
        if v:
            if n == "MASTER_ADDR":
                v = "%s:%s" % (v, os.environ.get("MASTER_PORT", ""))
            elif n == "SLURM_JOB_ID":
                v = "%s.%s" % (v, os.environ.get("SLURM_STEP_ID", ""))
            return _job_hash("%s=%s" % (n, v))
    return None


def env_marks(agent):
    """The launcher's view of this process's rank, as dist.env.* marks."""
    rank = _env_int(_ENV[0][1])
    if rank is None:
        return
    agent.mark("dist.env.rank", rank)
    for name, names in _ENV[1:]:
        v = _env_int(names)
        if v is not None:
            agent.mark(name, v)
    job = _env_job()
    if job is not None:
        agent.mark("dist.env.job", job)


# op -> (scope word, index of the input tensor argument, its keyword; None: no input)
_COLLECTIVES = {
    "all_reduce": ("all_reduce", 0, "tensor"),
    "all_gather": ("all_gather", 1, "tensor"),
    "all_gather_into_tensor": ("_allgather_base", 1, "input_tensor"),
    "_all_gather_base": ("_allgather_base", 1, "input_tensor"),
    "reduce_scatter": ("reduce_scatter", 1, "input_list"),
    "reduce_scatter_tensor": ("_reduce_scatter_base", 1, "input"),
    "_reduce_scatter_base": ("_reduce_scatter_base", 1, "input"),
    "all_to_all": ("all_to_all", 1, "input_tensor_list"),
    "all_to_all_single": ("all_to_all", 1, "input"),
    "broadcast": ("broadcast", 0, "tensor"),
    "reduce": ("reduce", 0, "tensor"),
    "gather": ("gather", 0, "tensor"),
    "scatter": ("scatter", 1, "scatter_list"),
    "barrier": ("barrier", None, None),
    "send": ("send", 0, "tensor"),
    "recv": ("recv", 0, "tensor"),
}


class _State(object):
    backend = None   # the default group's, from init_process_group
    seq = 0          # the default group's collectives so far


def _input_bytes(x):
    """(bytes, dtype name) of a tensor or a list of tensors; (0, None) when unknown."""
    if isinstance(x, (list, tuple)):
        total, dt = 0, None
        for t in x:
            b, d = _input_bytes(t)
            total += b
            dt = dt or d
        return total, dt
    try:
        return x.numel() * x.element_size(), str(x.dtype).replace("torch.", "")
    except Exception:
        return 0, None


def _group_index(fn):
    """The position of fn's parameter group, None when it has none."""
    try:
        import inspect
        names = list(inspect.signature(fn).parameters)
        return names.index("group") if "group" in names else None
    except Exception:
        return None


def _wrap(agent, c10d, fname, fn, word, argi, kw, state):
    default_group = getattr(c10d, "GroupMember", None)
    gi = _group_index(fn)

    def collective(*args, **kwargs):
        try:
            group = args[gi] if gi is not None and len(args) > gi else kwargs.get("group")
            default = group is None or group is getattr(default_group, "WORLD", None)
            backend = state.backend if default else None
            if backend is None:
                try:
                    backend = str(c10d.get_backend(group))
                except Exception:
                    backend = state.backend or "unknown"
            agent.scope_begin("%s:%s" % (backend, word))
        except Exception:
            return fn(*args, **kwargs)
        try:
            if default:
                state.seq += 1
                agent.mark("dist.pg", 0)
                agent.mark("dist.seq", state.seq)
            if argi is not None:
                x = args[argi] if len(args) > argi else kwargs.get(kw)
                n, dt = _input_bytes(x)
                if n and dt:
                    agent.mark("dist.bytes." + dt, n)
        except Exception:
            pass
        try:
            return fn(*args, **kwargs)
        finally:
            agent.scope_end()
    collective.__name__ = getattr(fn, "__name__", fname)
    collective.__qualname__ = getattr(fn, "__qualname__", fname)
    collective.__doc__ = getattr(fn, "__doc__", None)
    collective.__wrapped__ = fn
    return collective


def _wrap_init(agent, c10d, fn, state):
    def init_process_group(*args, **kwargs):
        r = fn(*args, **kwargs)
        try:
            rank, world = c10d.get_rank(), c10d.get_world_size()
            state.backend = str(c10d.get_backend())
            agent.mark("dist.rank", rank)
            agent.mark("dist.world_size", world)
            agent.mark("dist.backend." + state.backend, 1)
            local = _env_int(_ENV[2][1])
            if local is not None:
                agent.mark("dist.local_rank", local)
            how = kwargs.get("init_method") or (args[1] if len(args) > 1 else None)
            if not how or how == "env://":
                how = "%s:%s" % (os.environ.get("MASTER_ADDR", ""), os.environ.get("MASTER_PORT", ""))
            if kwargs.get("store") is None and how != ":":
                agent.mark("dist.job", _job_hash("%s/%d" % (how, world)))
        except Exception:
            pass
        return r
    init_process_group.__name__ = fn.__name__
    init_process_group.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
    init_process_group.__doc__ = fn.__doc__
    init_process_group.__wrapped__ = fn
    return init_process_group


def patch(agent, c10d):
    """Wraps init_process_group and the collectives of the module c10d
    (torch.distributed.distributed_c10d), once."""
    if getattr(c10d, "_inferscope_patched", False):
        return
    state = _State()
    init = getattr(c10d, "init_process_group", None)
    if callable(init):
        c10d.init_process_group = _wrap_init(agent, c10d, init, state)
    for fname, (word, argi, kw) in _COLLECTIVES.items():
        fn = getattr(c10d, fname, None)
        if callable(fn):
            setattr(c10d, fname, _wrap(agent, c10d, fname, fn, word, argi, kw, state))
    c10d._inferscope_patched = True
