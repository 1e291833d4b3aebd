"""InferScope annotations for user code.

    from inferscope import scope, mark

    with scope("step"):          # a named range; scopes are the iterations
        run_batch()              # the analyzer counts

    @scope("preprocess")         # also a decorator
    def preprocess(x): ...

    mark("tokens", n=128)        # a point event with an integer value

Under ``iscope-record`` these write straight into the trace from C
(_agent); otherwise they are cheap no-ops and _agent is never imported.
``mark_event`` is ``mark`` under the name older InferScope documents use.
"""
import functools as _functools
import os as _os

__all__ = ["scope", "mark", "mark_event", "enabled"]


def _load_agent():
    if not _os.environ.get("INFERSCOPE_SESSION") or _os.environ.get("INFERSCOPE_ENABLE") == "0":
        return None
    try:
        import _agent
    except Exception:
        return None
    return _agent if _agent.enabled() else None


_agent = _load_agent()


def enabled():
    """True when this process is being recorded."""
    return _agent is not None and _agent.enabled()


if _agent is not None:
    class scope(_agent.Scope):
        """scope(name): ``with scope(name):`` or ``@scope(name)``."""
        __slots__ = ()

        def __call__(self, fn):
            s = self

            @_functools.wraps(fn)
            def scoped(*args, **kwargs):
                with s:
                    return fn(*args, **kwargs)
            return scoped

    mark = _agent.mark
else:
    class scope(object):
        """scope(name): ``with scope(name):`` or ``@scope(name)``."""
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, fn):
            return fn

    def mark(name, n=1):
        """mark(name, n=1): a point event with an integer value."""

mark_event = mark
