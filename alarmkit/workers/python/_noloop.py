"""The asyncio event loop a Python Worker's code sees: none that runs, one that refuses by name.

A worker's ``asyncio.sleep``, ``gather`` and ``create_task`` run on the simulation's kernel (``_modules``).
The rest of ``asyncio`` is the process's, and what of it needs an event loop (``asyncio.wait_for``,
``asyncio.wait``, ``asyncio.to_thread``, an ``Event`` or a ``Queue`` waited on, ``loop.call_later``,
``loop.run_until_complete``) reaches for the running loop. While simulated code runs (``enter``/``leave``,
around a worker's import and a gated run) that loop is ``NO_LOOP``: any use of it raises a one-line
``WorkerUnsupported`` naming the asyncio call the worker made, where, and the way out. Without it such a
call was ``RuntimeError: no running event loop`` (or ``'NoneType' object has no attribute 'create_future'``),
followed on stderr by a "coroutine ... was never awaited" ``RuntimeWarning``.

Coroutines that the refused call was handed and that never started are closed (so no such warning follows
the error). A loop of the worker's own (``asyncio.new_event_loop``, ``asyncio.Runner``) is refused the same
way (it made a socket pair, refused as a network connection, then printed an "Exception ignored" traceback
when collected), and so is an ``asyncio.TaskGroup`` (it asked the loop for its parent task: a raw
``RuntimeError: TaskGroup cannot determine the parent task``). ``asyncio.run()`` fails with Python's text, as inside any running loop (Pyodide's).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from asyncio import events
from typing import Any

from ...errors import WorkerUnsupported
from ._contain import owner_frame

__all__ = ["NO_LOOP", "enter", "leave", "without_loop", "own_loop", "refused", "run"]

_ASYNCIO = os.path.join(os.path.dirname(asyncio.__file__), "")
_WHY = ("it needs an asyncio event loop, and the worker's code runs on the simulation's virtual clock instead; "
        "await the coroutine itself, or use asyncio.sleep, asyncio.gather and asyncio.create_task, which run on it")


def _close_unstarted(values: Any) -> None:
    for v in values:
        items = v if isinstance(v, (list, tuple, set, frozenset)) else (v,)
        for c in items:
            if inspect.iscoroutine(c) and inspect.getcoroutinestate(c) == inspect.CORO_CREATED:
                c.close()


def refused(frame: Any, what: str | None) -> WorkerUnsupported:
    """The refusal of an asyncio call that needs a loop: ``frame`` is where the loop was reached; the
    asyncio call named is the outermost of asyncio's frames before the code that made it (``what`` when
    the code reached the loop itself, ``loop.call_later()``)."""
    outer = None
    while frame is not None and frame.f_code.co_filename.startswith(_ASYNCIO):
        outer = frame
        _close_unstarted(frame.f_locals.values())
        frame = frame.f_back
    if outer is not None:
        code = outer.f_code
        what = f"asyncio.{getattr(code, 'co_qualname', code.co_name)}()"
    kind, owner = owner_frame(frame)
    at = "?" if owner is None else f"{owner.f_code.co_filename}:{owner.f_lineno or '?'}"
    code_of = "the worker's code" if kind == "worker" else "code the simulation runs"
    return WorkerUnsupported(f"{what} in {code_of} at {at}: {_WHY}")


class _NoLoop:
    """The running loop while simulated code runs: every attribute refuses (see the module docstring)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise refused(sys._getframe(1), f"loop.{name}()")

    def __repr__(self) -> str:
        return "<no asyncio event loop: the simulation's virtual clock runs this code>"


NO_LOOP = _NoLoop()


def enter() -> Any:
    """Make ``NO_LOOP`` this thread's running loop; returns the one it replaces, for ``leave``."""
    prev = events._get_running_loop()
    events._set_running_loop(NO_LOOP)
    return prev


def leave(prev: Any) -> None:
    events._set_running_loop(prev)


def without_loop(fn: Any) -> Any:
    """``fn`` run with ``NO_LOOP`` as the running loop (a worker's import)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        prev = enter()
        try:
            return fn(*args, **kwargs)
        finally:
            leave(prev)

    return call


def own_loop(name: str) -> Any:
    """``asyncio.new_event_loop`` / ``asyncio.Runner`` / ``asyncio.TaskGroup`` for the worker: refused by name."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        _close_unstarted(args)
        raise refused(sys._getframe(1), f"asyncio.{name}()")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def run(main: Any, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.run`` for the worker: its code runs inside a loop, so Python's own refusal (the coroutine
    closed, as it never ran)."""
    _close_unstarted((main,))
    raise RuntimeError("asyncio.run() cannot be called from a running event loop")
