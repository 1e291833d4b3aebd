# InferScope: loads the CPU collector (_agent) into a Python process started
# under iscope-record, then chain-loads the sitecustomize this one shadows.
#
# iscope-record puts this directory first on PYTHONPATH, so every Python the
# workload starts imports this file, including interpreters we do not
# support: keep it valid Python 2.7 and 3.x, and never raise.
import os
import sys


def _inferscope_say(what):
    try:
        sys.stderr.write("inferscope: %s\n" % (what,))
    except Exception:
        pass


def _inferscope_record_exception(agent, etype, value, tb):
    """One EXCEPTION record: type, where it was raised (the innermost frame), message."""
    try:
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        code = tb.tb_frame.f_code if tb is not None else None
        agent.exception(getattr(etype, "__qualname__", None) or str(etype),
                        code.co_filename if code else "", tb.tb_lineno if tb is not None else 0,
                        getattr(code, "co_qualname", None) or (code.co_name if code else ""),
                        str(value).replace("\n", " "))
    except Exception:
        pass


def _inferscope_hook_exceptions(agent, threading, threads_only=False):
    """Chains sys.excepthook and threading.excepthook (threading None: not
    yet): an unhandled exception is recorded, then whatever hook was there
    before runs as usual."""
    if not threads_only:
        previous = sys.excepthook

        def excepthook(etype, value, tb):
            _inferscope_record_exception(agent, etype, value, tb)
            previous(etype, value, tb)
        sys.excepthook = excepthook
    previous_thread = getattr(threading, "excepthook", None)
    if previous_thread is not None:
        def thread_excepthook(args):
            if args.exc_type is not SystemExit:
                _inferscope_record_exception(agent, args.exc_type, args.exc_value, args.exc_traceback)
            previous_thread(args)
        threading.excepthook = thread_excepthook


def _inferscope_start():
    if not os.environ.get("INFERSCOPE_SESSION") or os.environ.get("INFERSCOPE_ENABLE") == "0":
        return
    if sys.version_info < (3, 9):
        _inferscope_say("cannot attach: Python %d.%d is not supported (3.9 or later)"
                        % sys.version_info[:2])
        return
    try:
        import _agent
    except Exception as e:
        _inferscope_say("cannot attach: %s" % (e,))
        return
    if not _agent.enabled():
        return  # _agent said why
    try:
        import atexit
        atexit.register(_agent.exit_hook)
        # --python=sample: no per-call hook; iscope-record reads the stacks.
        # sys.monitoring (3.12+) covers every thread; the profile hook must
        # be put on each new thread
        if os.environ.get("INFERSCOPE_PYTHON_MODE") != "sample":
            import threading
            if _agent.mechanism() == "setprofile":
                threading.setprofile(_agent.thread_hook)
            _agent.start(threading.current_thread().name)
            _inferscope_hook_exceptions(_agent, threading)
            _inferscope_distributed(_agent)
            return
        os.register_at_fork(after_in_child=_agent.fork_attach)
        # the main thread before threading exists (its name then is always
        # MainThread); the rest waits for the workload to import threading:
        # importing it here cost about 3 ms (collections, functools) that a
        # script without threads never pays
        _agent.start("MainThread")
        _inferscope_hook_exceptions(_agent, None)
        if "threading" in sys.modules:
            _inferscope_patch_threading(_agent, sys.modules["threading"])
        else:
            sys.meta_path.insert(0, _InferscopeImportFinder(
                "threading", lambda m: _inferscope_patch_threading(_agent, m)))
        _inferscope_distributed(_agent)
    except Exception as e:
        _inferscope_say("cannot attach: %s" % (e,))


# Environment variables that give a process its rank (inferscope/_dist.py)
_INFERSCOPE_RANK_ENV = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def _inferscope_distributed(agent):
    """The rank the launcher's environment gives (dist.env.* marks), and
    torch.distributed's init and collectives once the workload imports
    it (inferscope/_dist.py: dist.* marks, BACKEND:OP scopes)."""
    if any(os.environ.get(k) for k in _INFERSCOPE_RANK_ENV):
        try:
            from inferscope import _dist
            _dist.env_marks(agent)
        except Exception as e:
            _inferscope_say("cannot read the rank: %s" % (e,))

    def patch(module):
        from inferscope import _dist
        _dist.patch(agent, module)
    sys.meta_path.insert(0, _InferscopeImportFinder("torch.distributed.distributed_c10d", patch))


def _inferscope_patch_threading(agent, threading):
    """--python=sample: names each new thread (no hook reports it) and
    chains threading.excepthook."""
    run = threading.Thread._bootstrap_inner

    def _inferscope_bootstrap_inner(self):
        try:
            agent.start(self.name)
        except Exception:
            pass
        return run(self)
    threading.Thread._bootstrap_inner = _inferscope_bootstrap_inner
    _inferscope_hook_exceptions(agent, threading, threads_only=True)


class _InferscopeImportLoader(object):
    """The real loader of a module, which then calls after(module) on the
    module it ran; anything else (get_source, is_package...) is the real
    loader's."""

    def __init__(self, real, after):
        self._inferscope_real = real
        self._inferscope_after = after

    def __getattr__(self, name):
        return getattr(self._inferscope_real, name)

    def create_module(self, spec):
        create = getattr(self._inferscope_real, "create_module", None)
        return create(spec) if create else None

    def exec_module(self, module):
        self._inferscope_real.exec_module(module)
        try:
            self._inferscope_after(module)
        except Exception as e:
            _inferscope_say("cannot patch %s: %s" % (module.__name__, e))


class _InferscopeImportFinder(object):
    """Finds nothing itself: the first import of the module name gets the
    spec the other finders give, with its loader wrapped (after(module) is
    called once it ran): threading in sample mode (names threads),
    torch.distributed.distributed_c10d (ranks and collectives)."""

    def __init__(self, name, after):
        self.name = name
        self.after = after

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if getattr(spec.loader, "exec_module", None) is not None:
            spec.loader = _InferscopeImportLoader(spec.loader, self.after)
        return spec


def _inferscope_chain():
    """Imports the next sitecustomize on sys.path (Debian's, a venv's...)."""
    here = os.path.dirname(os.path.realpath(__file__))
    mine = sys.modules.get("sitecustomize")
    removed = []
    for i in range(len(sys.path) - 1, -1, -1):
        try:
            same = os.path.realpath(sys.path[i] or os.getcwd()) == here
        except Exception:
            same = False
        if same:
            removed.append((i, sys.path.pop(i)))
    sys.modules.pop("sitecustomize", None)
    try:
        __import__("sitecustomize")
    except ImportError as e:
        name = getattr(e, "name", None)
        if name not in ("sitecustomize", None) or "sitecustomize" not in str(e):
            _inferscope_say("error in the next sitecustomize: %s" % (e,))
    except Exception as e:
        _inferscope_say("error in the next sitecustomize: %s" % (e,))
    finally:
        for i, p in reversed(removed):
            sys.path.insert(i, p)
        if "sitecustomize" not in sys.modules and mine is not None:
            sys.modules["sitecustomize"] = mine


# Chain first so the other sitecustomize and our path juggling stay out of
# the trace; recording starts as the last thing before the workload's code.
try:
    _inferscope_chain()
except Exception as e:
    _inferscope_say("error in the next sitecustomize: %s" % (e,))
try:
    _inferscope_start()
except Exception as e:
    _inferscope_say("cannot attach: %s" % (e,))
