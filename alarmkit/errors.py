"""Every error alarmkit raises on purpose derives from ``AlarmkitError``; all of them are defined
here and exported at the top level (``alarmkit.FacetBroken``...)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlarmkitError",
    "InternalError",
    "ObjectCrashed",
    "Aborted",
    "HandlerTimeout",
    "JournalLocked",
    "ScenarioError",
    "SqlError",
    "InjectedError",
    "UncountedFailure",
    "FaultPlanError",
    "FacetsUnavailable",
    "FacetAlarmError",
    "FacetBroken",
    "ActorBroken",
    "WorkerdError",
    "InvalidValue",
    "AlarmTimeError",
    "NoAlarmHandler",
    "RunawayError",
    "JournalWriteError",
    "JournalClosed",
    "PlanNotApplied",
    "JsHostError",
    "JsHostLost",
    "JsError",
    "JsValueError",
    "WorkerError",
    "WorkerUnsupported",
    "MemberUnsupported",
    "WorkerFailure",
    "DriveError",
]


class AlarmkitError(Exception):
    """Base class: a misuse of alarmkit, with the value at fault and the way out in the message."""


class InternalError(AlarmkitError):
    """A broken internal invariant: this should never happen; please report it."""


# -- the runtime ---------------------------------------------------------------------------------------------
class ObjectCrashed(AlarmkitError):
    """The process hosting an object died while a call or handler was running in it."""


class Aborted(AlarmkitError):
    """``ctx.abort(reason)`` reset the object: its calls in flight and a running ``alarm()`` fail with
    this; ``retry_alarm`` says whether that ``alarm()`` is retried (a counted failure) or not."""

    def __init__(self, message: str, retry_alarm: bool = True) -> None:
        super().__init__(message)
        self.retry_alarm = retry_alarm


class HandlerTimeout(AlarmkitError):
    """``alarm()`` ran past the profile's wall-clock limit (15 minutes on workerd)."""


class SqlError(AlarmkitError):
    """An SQL statement failed (bad syntax, constraint, missing table...), or workerd's SQL authorizer refused it:
    the message is workerd's text (docs/errors.md, "SQL refusals"). In JavaScript it is a plain ``Error``."""


class FacetsUnavailable(AlarmkitError, AttributeError):
    """The runtime has no facets (celld): ``ctx.facets`` is not defined. ``hasattr(ctx, "facets")`` is False."""


class FacetAlarmError(AlarmkitError):
    """A facet's alarm write failed on the commit path (an ``Error`` in JavaScript: a counted failure)."""


class FacetBroken(FacetAlarmError):
    """``Facets currently cannot set alarms.``: the facet broke; its parent carries on."""


class ActorBroken(FacetAlarmError):
    """``alarms are not yet implemented for SQLite-backed Durable Objects``: the whole actor broke."""


# -- faults --------------------------------------------------------------------------------------------------
class InjectedError(AlarmkitError):
    """An exception thrown on purpose by a fault plan (a counted failure, as a user error is)."""


class UncountedFailure(AlarmkitError):
    """A failure that is not the worker's fault: retried without using up the retry budget."""


class FaultPlanError(AlarmkitError):
    """A fault plan value (or file) with a bad field; the message names the field and what it allows."""


# -- around the runtime --------------------------------------------------------------------------------------
class JournalLocked(AlarmkitError):
    """The journal file is held open by another process."""


class ScenarioError(AlarmkitError):
    """A scenario name or parameter that does not exist or is out of range."""


class WorkerdError(AlarmkitError, RuntimeError):
    """workerd could not be installed, started or reached."""


class InvalidValue(AlarmkitError, ValueError):
    """A time out of range (times are ints of ms in 0..2**53) or a name that is not valid text,
    refused where it entered, before it could reach the journal."""


class AlarmTimeError(InvalidValue, TypeError):
    """``set_alarm`` got a time it cannot take: a ``TypeError``, as workerd's ``setAlarm`` throws,
    and an ``InvalidValue`` (so the CLI reports it as a user error)."""


class NoAlarmHandler(AlarmkitError, TypeError):
    """``set_alarm`` from outside the constructor in a class without ``alarm()``: a ``TypeError``, as
    workerd's ``assertCanSetAlarm`` throws (src/workerd/api/actor-state.c++)."""


class RunawayError(AlarmkitError):
    """A ``run()`` or ``call()`` hit its budget: too many kernel steps while the virtual clock stood
    still (``step_limit``), the clock would pass ``time_limit_ms`` with no ``until``/``limit``, more
    journal events than ``event_limit`` (a re-arm storm), or one step of a Python Worker's code ran past
    ``wall_limit_s`` of wall-clock time (its object reset as a crash resets it). The message names the
    object and the task or loop; the simulation can go on."""


class JournalWriteError(AlarmkitError):
    """A batch of events could not be written to the journal; every event of it is kept in
    ``journal.unwritten`` (``journal.unwritten_rows()`` lists them)."""


class JournalClosed(AlarmkitError):
    """A journal read or written after ``close()`` (or after its ``with`` block): the message names
    the file and how to read it again (``Journal(path, read_only=True)``)."""


class PlanNotApplied(AlarmkitError):
    """``explore(strict=True)``: an entry of the fault plan injected nothing in any run.
    ``exploration`` holds what was found anyway."""

    def __init__(self, message: str, exploration: object = None) -> None:
        super().__init__(message)
        self.exploration = exploration


# -- a user's JavaScript worker (alarmkit/workers/js) ---------------------------------------------------------
class JsHostError(AlarmkitError):
    """The JavaScript host could not run a worker: Node.js missing or too old, esbuild not installed,
    a module that does not build or load, a class named in ``bindings`` that it does not export, or a
    host process that died or stopped answering. The message names the cause and the way out."""


class JsError(AlarmkitError):
    """An exception thrown by the user's JavaScript (a constructor, an RPC method, ``alarm()``, a
    ``fetch`` handler): ``js_name`` (``TypeError``...), the message, and ``js_stack``. Thrown in
    ``alarm()`` it is a counted failure, retried as workerd retries it."""

    def __init__(self, message: str, js_name: str = "Error", js_stack: str = "", js_message: str | None = None,
                 js_props: dict | None = None) -> None:
        super().__init__(message)
        self.js_name = js_name
        self.js_stack = js_stack
        self.js_message = message if js_message is None else js_message  # the JS error's own message (no name)
        self.js_props = dict(js_props or {})  # its own fields that JSON carries (a ``code``...)


class JsValueError(InvalidValue):
    """A value that cannot cross to JavaScript as JSON (NaN, infinity, bytes, an arbitrary object),
    refused before it is sent, naming what can."""


# -- user workers (alarmkit.workers) ---------------------------------------------------------------------------
class JsHostLost(JsHostError):
    """The JavaScript host died or stopped answering in the middle of a simulation (a synchronous
    endless loop, a killed Node): this simulation cannot go on. Not a finding of the run it met:
    ``explore`` stops at the first one and names it, rather than wait out every run's timeout."""


class WorkerError(AlarmkitError):
    """A worker cannot be loaded as given: no such file or class, a syntax error in its module, a binding
    that names no Durable Object class, a wrangler file alarmkit cannot read."""


def _listeners() -> tuple:
    hooks: list = []

    def listen(fn: Any) -> None:
        if fn not in hooks:
            hooks.append(fn)

    def call(err: BaseException) -> None:
        for fn in tuple(hooks):
            try:
                fn(err)
            except Exception:  # noqa: BLE001 - a listener never stops the refusal itself
                pass

    return listen, call


# ``listen(fn)``: ``fn(err)`` is called as each ``WorkerUnsupported`` is made (the hosts journal it: a refusal
# the code catches is still seen). Held in a closure: the worker's code cannot empty the list.
listen_refusals, _call_listeners = _listeners()
_SEALED = frozenset({"noticed", "__init__", "__new__", "__setattr__", "__delattr__"})


class _Sealed(type):
    """``WorkerUnsupported``'s metaclass: ``noticed`` and its constructor cannot be replaced or deleted (a
    worker's ``WorkerUnsupported.noticed = lambda self: None`` would hide its refusals from the verdict)."""

    def __setattr__(cls, name: str, value: Any) -> None:
        if name in _SEALED:
            raise WorkerUnsupported(f"WorkerUnsupported.{name} = ... is refused: every refusal is journaled (a "
                                    "refused event) and named in the verdict, and that cannot be turned off")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if name in _SEALED:
            raise WorkerUnsupported(f"del WorkerUnsupported.{name} is refused: every refusal is journaled (a "
                                    "refused event) and named in the verdict, and that cannot be turned off")
        super().__delattr__(name)


class WorkerUnsupported(WorkerError, metaclass=_Sealed):
    """The worker used what the simulation cannot run (outbound fetch, a KV, R2, D1 or queue binding...),
    or a Python Worker's code reached out of the simulation (a socket, a file written, a process, a
    thread: refused at the call by an audit hook); the message names it and how to stub it
    (``bindings={"NAME": a_python_object}``). Each one is *noticed* as it is made: the hosts journal a
    ``refused`` event, so a refusal the code (or a library) catches still reaches the verdict."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.noticed()

    def noticed(self, _call: Any = _call_listeners) -> None:
        _call(self)


class MemberUnsupported(WorkerUnsupported, AttributeError):
    """A member the Python Worker host refuses (``ctx.getWebSockets``, ``js.Math.floor``, a sqlite3
    connection's ``load_extension``), raised as it is read: a ``WorkerUnsupported`` naming it, and an
    ``AttributeError``, so ``hasattr(obj, name)`` is False and ``getattr(obj, name, default)`` gives the
    default, as for a member that is not there."""


class WorkerFailure(AlarmkitError):
    """A Python Worker's code failed with what Python does not pass on as an ordinary exception: a
    ``BaseException`` that is not an ``Exception`` (``GeneratorExit``, a class of its own), or an exception
    whose text cannot be read (its ``__str__`` raised). The handler failed with this one-line error naming
    the original; in ``alarm()`` it is a counted failure, retried as any exception is."""


class DriveError(WorkerError):
    """A drive script (requests and waits at virtual times) is malformed or names a missing method."""
