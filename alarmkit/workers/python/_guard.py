"""A Python Worker's code as the simulation runs it: its failures made ordinary, its output captured, its
steps gated (``_contain``).

- ``guarded(what, fn)`` (and ``guard_coro``; both through ``_raise_ordinary``, the one home): ``fn`` (a
  handler: ``alarm``, ``fetch``, an RPC method, a constructor) whose ``BaseException`` that is not an ``Exception`` (``GeneratorExit``, a class of the worker's own), or
  exception whose text cannot be read, becomes a ``WorkerFailure`` naming it: the handler failed (in
  ``alarm()`` a counted failure, retried), where it would otherwise have stopped the whole simulation.
  ``KeyboardInterrupt`` and ``SystemExit`` still stop the run, as in any object (docs/runtime.md), as
  plain ones when the worker's could not be read (``passable``).
- ``printer(worker)``: the worker's ``print``: each call one ``console`` line (level ``log``, or ``error``
  with ``file=sys.stderr``) in the journal and in ``w.logs``, never on stdout.
- ``gate_steps(sim)``: ``sim``'s runs are simulated code (``_contain``: the hook refuses in them, the
  watchdog watches them); a step the watchdog stopped (``wall_limit_s``, ``memory_limit_mb``) is a one-line
  ``RunawayError``.
"""

from __future__ import annotations

import sys
import threading
from types import CoroutineType, coroutine
from typing import Any, Callable

from ..._text import name_of, text_of
from ...errors import WorkerFailure, listen_refusals
from ...kernel import NO_LIMIT, over_memory_limit, over_wall_limit
from .._base import journal_refusal
from ._contain import STATE, WAKE, MemoryLimit, WallClockLimit, _FILES, ensure_watchdog, rss_pages
from ._noloop import enter as no_loop, leave as leave_loop

__all__ = ["guarded", "guard_coro", "printer", "gate_steps", "log_line", "MAX_LOGS", "where_stopped", "start_task",
           "ordinary", "passable", "name_of", "text_of", "NOTE", "noted", "running_ctx"]

MAX_LOGS = 100_000  # lines kept in w.logs (every one is in the journal too)
NOTE = "raised in the simulated code of"  # as the runtime notes an interruption (alarmkit.cli tells it from Ctrl-C)
_PASS = (KeyboardInterrupt, SystemExit, WallClockLimit)
CURRENT: list = [None]  # the simulation's ctx of the object whose code runs now (for its console lines)


def _safely(read: Callable[[], Any], default: Any = None) -> Any:
    try:
        return read()
    except BaseException:  # noqa: BLE001 - the worker's own class: anything can come out of it
        return default


def passable(err: BaseException) -> BaseException:
    """``err`` (a ``KeyboardInterrupt`` or ``SystemExit`` of the worker's, passed on to stop the run) as the
    code that reports it can read it: itself when it is plain, else a plain one of the same base with its
    readable text, its notes that are text and an exit code that is an int, text or None (a subclass whose
    ``__str__`` raises, ``__notes__ = 5``, ``sys.exit(obj)`` whose ``repr`` raises crashed the command)."""
    base = KeyboardInterrupt if isinstance(err, KeyboardInterrupt) else SystemExit if isinstance(err, SystemExit) \
        else None
    if base is None:
        return err
    notes = _safely(lambda: vars(err).get("__notes__"))
    code = _safely(lambda: err.code) if base is SystemExit else None
    readable = _safely(lambda: str(err) is not None, False)
    texts = type(notes) is list and all(type(n) is str for n in notes)
    if type(err) is base and readable and (notes is None or texts) and (code is None or type(code) in (int, str)):
        return err
    if base is SystemExit:
        new: BaseException = SystemExit(code if code is None or type(code) in (int, str) else
                                        f"<an object of class {name_of(code)}>")
    else:
        new = KeyboardInterrupt(text_of(err))
    for note in notes if type(notes) is list else ():
        if type(note) is str:
            new.add_note(note)
    return new


def noted(err: BaseException) -> bool:
    """``err`` (``passable``: its notes a list of text) carries alarmkit's note of where it was raised; the
    code's own notes do not stand for it (the command reads what ran from it)."""
    return any(n.startswith(NOTE) for n in getattr(err, "__notes__", ()))


def _failure(err: BaseException, what: str, ctx: Any = None) -> BaseException | None:
    """What stands for ``err``, raised from a worker's handler: a ``WorkerFailure`` naming it, a plain
    ``passable`` stand-in, or None when ``err`` passes as it is (a ``KeyboardInterrupt`` raised outside any
    object is noted as the worker's own, as the runtime notes one raised in an object: not a Ctrl-C)."""
    if isinstance(err, _PASS):
        new = passable(err)
        if ctx is None and isinstance(new, KeyboardInterrupt) and not noted(new):
            new.add_note(f"{NOTE} the worker's {what}, outside any Durable Object")  # its own: not a Ctrl-C
        return None if new is err else new
    if not isinstance(err, Exception):
        text = text_of(err)
        return WorkerFailure(f"{what} raised {name_of(err)}{': ' + text if text else ''}, a BaseException that "
                             "is not an Exception: the handler failed; raise an Exception (ValueError, RuntimeError...) "
                             "from a handler")
    try:
        str(err)
    except BaseException as inner:  # noqa: BLE001 - the worker's __str__
        return WorkerFailure(f"{what} raised {name_of(err)}, whose text cannot be read (its __str__ raised "
                             f"{name_of(inner)}): the handler failed")
    return None


def ordinary(err: BaseException, what: str, ctx: Any = None) -> BaseException:
    """The one home of what a worker's code may raise into the simulation (``_raise_ordinary``): ``err``
    itself when the simulation and the command can read it, else what stands for it (``_failure``)."""
    return _failure(err, what, ctx) or err


def _raise_ordinary(err: BaseException, what: str, ctx: Any = None) -> None:
    """Raise, from the ``except`` block handling ``err``, what stands for it (``ordinary``)."""
    new = ordinary(err, what, ctx)
    if new is err:
        raise  # noqa: PLE0704 - re-raised as it was, its traceback kept
    raise new from None


@coroutine
def _suspend(fut: Any) -> Any:
    return (yield fut)


async def guard_coro(coro: Any, what: str, ctx: Any = None) -> Any:
    """A native coroutine driving the worker's ``coro`` step by step (so the runtime's fast path for
    ``alarm()`` still applies): what the worker's code raises in a step is made ordinary (``_failure``);
    a close of this coroutine (its task killed) closes ``coro`` and is never taken for the worker's own."""
    value: Any = None
    exc: BaseException | None = None
    while True:
        outer, CURRENT[0] = CURRENT[0], ctx
        try:
            fut = coro.send(value) if exc is None else coro.throw(exc)
        except StopIteration as stop:
            return stop.value
        except BaseException as err:
            if err is exc:
                raise  # what was thrown in comes back out: not the worker's own
            _raise_ordinary(err, what, ctx)
        finally:
            CURRENT[0] = outer
        try:
            value, exc = await _suspend(fut), None
        except GeneratorExit:  # closed while suspended: the task was killed
            coro.close()
            raise
        except BaseException as err:  # thrown in by the kernel: handed to the worker's code
            value, exc = None, err


def guarded(what: str, ctx: Any, fn: Callable, *args: Any) -> Any:
    """``fn(*args)``, its failure (and that of the coroutine it returns) made ordinary (``_failure``);
    ``ctx``: the simulation's ctx of the object it runs in (None outside one)."""
    outer, CURRENT[0] = CURRENT[0], ctx
    try:
        result = fn(*args)
    except BaseException as err:
        _raise_ordinary(err, what, ctx)
    finally:
        CURRENT[0] = outer
    if result.__class__ is CoroutineType:
        return guard_coro(result, what, ctx)
    return result


def start_task(sim: Any, aw: Any, name: str) -> Any:
    """``asyncio.create_task`` / ``waitUntil`` in a worker: inside an object, one of its tasks (it dies with
    the instance, commits at its awaits, as a promise of the object's in workerd), guarded as its handlers."""
    ctx = CURRENT[0]
    if aw.__class__ is CoroutineType:
        aw = guard_coro(aw, f"a task it started ({name})", ctx)
    if ctx is not None and ctx._host.ctx is ctx:
        return ctx.start(aw, name)
    return sim.spawn(aw, name)


def log_line(worker: Any, level: str, text: str) -> None:
    """One line of the worker's output: in ``w.logs`` (the first ``MAX_LOGS``) and a ``console`` event,
    about the object whose task runs (or the whole run, outside any object)."""
    sim = worker.sim
    if len(worker.logs) < MAX_LOGS:
        worker.logs.append((sim.now, level, text))
    detail = {"level": level, "text": text[:4000]}
    ctx = running_ctx(sim)
    if ctx is not None:
        ctx.journal_event("console", detail=detail)
    else:
        sim.journal_event("console", detail=detail)


def running_ctx(sim: Any) -> Any:
    """The live ctx of the object whose code runs now in ``sim`` (None: outside any object)."""
    ctx = CURRENT[0]
    if ctx is None:
        host = getattr(getattr(sim.kernel.current, "on_suspend", None), "__self__", None)
        ctx = getattr(host, "ctx", None)
    if ctx is not None and hasattr(ctx, "journal_event") and ctx._host.ctx is ctx:  # a live instance's
        return ctx
    return None


def _noticed(err: BaseException) -> None:
    """A ``WorkerUnsupported`` made while a Python Worker's code runs (a gated call): journaled as ``refused``
    about the object whose code runs, at the virtual time now (``journal_refusal``), caught or not."""
    sim = STATE.sim
    if not STATE.depth or sim is None:
        return
    ctx = running_ctx(sim)
    journal_refusal(sim, None if ctx is None else ctx._host, err)


listen_refusals(_noticed)


def printer(worker: Any) -> Callable[..., None]:
    """The worker's ``print`` (see the module docstring)."""
    real_print = print

    def print_(*args: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False) -> None:
        if file is not None and file is not sys.stdout and file is not sys.stderr and file is not sys.__stdout__ \
                and file is not sys.__stderr__:
            real_print(*args, sep=sep, end=end, file=file, flush=flush)  # a StringIO of its own
            return
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        text = sep.join(str(a) for a in args) + end
        if text.endswith("\n"):
            text = text[:-1]
        level = "error" if file is sys.stderr or file is sys.__stderr__ else "log"
        log_line(worker, level, text)

    return print_


def where_stopped(err: BaseException) -> str:
    """``file:line`` of the worker's code where ``err`` was raised (the last worker frame it passed)."""
    found, tb = "", err.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name in _FILES and tb.tb_lineno is not None:
            found = f"{name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found or "a line of the worker's code"


def _object_of(err: BaseException) -> str:
    for note in getattr(err, "__notes__", ()):
        if note.startswith(NOTE):
            return note[len(NOTE):].strip().split(" at ")[0]
    return "the worker's code"


def gate_steps(sim: Any) -> None:
    """Run ``sim`` as simulated code (once per simulation): its ``run()`` and ``call()`` (the kernel's
    ``run``, ``run_until_complete``) and ``sim.step()``, so the hook refuses inside them and the watchdog
    watches them. Nothing is added to a kernel step: the watchdog reads the kernel's own progress."""
    kernel = sim.kernel
    if "run" in vars(kernel):
        return
    ensure_watchdog()
    kernel.run = _gated(sim, kernel.run)
    kernel.run_until_complete = _gated(sim, kernel.run_until_complete)
    sim.step = _gated(sim, sim.step)


def _gated(sim: Any, inner: Callable) -> Callable:
    st, kernel, ident = STATE, sim.kernel, threading.get_ident

    def gated(*args: Any, **kwargs: Any) -> Any:
        outer = st.kernel, st.limit, st.memory, st.sim
        memory = sim._memory_limit_mb
        st.base = rss_pages() if memory is not None else 0  # one pread (~1 us) a run(), call() or step(), set
        st.kernel, st.limit, st.memory, st.thread = kernel, sim._wall_limit_s, memory, ident()  # before the limit
        st.sim = sim
        st.depth += 1
        if memory is not None:
            st.armed = True
            if st.dozing:
                WAKE.set()  # the watchdog, dozing, looks at once (_contain.gate)
        st.serial += 1
        loop = no_loop()  # asyncio that needs a loop is refused by name in the worker's code (_noloop)
        try:
            return inner(*args, **kwargs)
        except MemoryLimit as err:
            where, err.__traceback__ = where_stopped(err), None  # the frames (and what they hold) let go
            raise over_memory_limit(_object_of(err), st.memory or 0, st.grew_mb, where) from None
        except WallClockLimit as err:
            raise over_wall_limit(_object_of(err), st.limit or 0, where_stopped(err)) from None
        finally:
            leave_loop(loop)
            st.depth -= 1
            st.kernel, st.limit, st.memory, st.sim = outer

    return gated
