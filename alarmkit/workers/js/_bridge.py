"""The Python side of the JavaScript host: each JS Durable Object class is bound as a Python
``DurableObject`` class whose methods forward to Node, so the simulation's own runtime delivers
its calls and alarms (input gate, commit points, the alarm scheduler, journal, faults, restarts).

One event goes to Node per message; Node runs it until its turn ends and reports (see host.mjs).
The report is applied here, in the Python task that sent the event: its storage writes go to the
object's storage at once (they commit when that task next suspends or ends, as every write does);
a settled promise resolves the Future its Python caller awaits; a JS timer becomes one of the
object's tasks sleeping on the virtual clock (so it dies with the instance); a call to another
object becomes one of its tasks making an ordinary RPC through a stub.
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Callable

from ...runtime import DurableObject, Future
from ...errors import (Aborted, AlarmkitError, FacetAlarmError, JsError, ObjectCrashed, JsHostError, JsHostLost, JsValueError,
                       SqlError, WorkerUnsupported)
from .._base import Request, Response
from .._libs import LibraryWatch
from ._facet_ops import FACET
from ._http import _effect_key, _fetched, _request_dict, _response, _response_dict
from ._refs import owner_call, stub_call
from ._storage_ops import apply_op

__all__ = ["Bridge", "JsObject"]


def _error_info(err: BaseException) -> dict:
    if isinstance(err, JsError):  # a JS error crossing back to JS: its class name, bare message and own fields
        info = {"name": err.js_name, "message": err.js_message}
        if err.js_props:
            info["props"] = err.js_props
        return info
    if isinstance(err, TypeError):  # NoAlarmHandler: workerd's assertCanSetAlarm throws a TypeError
        return {"name": "TypeError", "message": str(err)}
    if isinstance(err, (Aborted, ObjectCrashed, FacetAlarmError, SqlError)):  # workerd rejects a reset object's callers with a plain Error
        # (and its SQL errors are plain Errors: SqlStorageRegulator::onError, the sql_errors probe)
        return {"name": "Error", "message": str(err)}
    return {"name": type(err).__name__, "message": str(err)}


def _js_error(info: dict) -> JsError:
    name, message = info.get("name", "Error"), info.get("message", "")
    return JsError(f"{name}: {message}", name, info.get("stack", ""), message, info.get("props") or {})


# workerd's names no RPC reaches (src/workerd/api/worker-rpc.c++, isReservedName); fetch is a stub's own
RESERVED = frozenset({"connect", "alarm", "webSocketMessage", "webSocketClose", "webSocketError", "dup", "constructor"})

# an alarm event's JSON, formatted (see Bridge.event): iid, retry count, scheduled time, pid, now
_ALARM = '{"t":"alarm","iid":%d,"info":[%d,%d],"pid":%d,"now":%d}'


def _ints(msg: dict) -> tuple:
    """The values of an alarm message in ``_ALARM``'s order, checked to be ints (%d would truncate others)."""
    info = msg["info"]
    values = (msg["iid"], info[0], info[1], msg["pid"], msg["now"])
    for v in values:
        if v.__class__ is not int:
            raise JsHostError(f"internal: an alarm message holds {v!r}, not an int")
    return values


def _write_error(op: list, err: Exception) -> Exception:
    """An operation of a turn's report that could not be applied (a key no storage can hold...): an
    ``AlarmkitError`` naming it; alarmkit's own errors (a reset object's) as they are."""
    if isinstance(err, AlarmkitError):
        return err
    what = f"{op[0]}({op[2]!r})" if len(op) > 2 else f"{op[0]}()"
    return AlarmkitError(f"the JavaScript object's {what} could not be applied ({type(err).__name__}: {err}); "
                         "the rest of its turn was")


def _settle(fut: Future, ok: bool, value: Any) -> None:
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(_js_error(value))


class JsObject(DurableObject):
    """A JS Durable Object as the simulation sees it (subclassed once per bound class by ``Bridge``)."""

    _bridge: Bridge
    _binding: str
    _js_class: str
    _facet = False  # a class made for ctx.facets (Bridge.facet_class)

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        bridge = self._bridge
        self._iid = iid = next(bridge.iids)
        bridge.instances[iid] = self
        drop = bridge.live.get((self._binding, ctx.label))
        bridge.live[(self._binding, ctx.label)] = iid
        if drop is not None:
            bridge.instances.pop(drop, None)
        pid = next(bridge.pids)
        fut = bridge.future(f"p{pid}")
        bridge.exchange({"t": "new", "iid": iid, "pid": pid, "binding": self._binding, "cls": self._js_class,
                         "name": str(ctx.id), "idname": ctx.id.name, "drop": drop,
                         "facets": bridge.sim.profile.facet_alarms is not None,
                         "facet": ctx.label if self._facet else None})
        bridge.futures.pop(f"p{pid}", None)
        if fut.exception() is not None:  # the constructor threw: the instance never existed
            bridge.instances.pop(iid, None)
            raise fut.exception()

    async def alarm(self, info: Any) -> None:
        await self._bridge.event(self, {"t": "alarm", "iid": self._iid, "info": [info.retry_count, info.scheduled_time]},
                                 _ALARM)

    async def fetch(self, url: Any, method: str = "GET", headers: Any = None, body: str | bytes | None = None) -> Response:
        """``stub.fetch(url or Request, method=, headers=, body=)``: the object's ``fetch(request)``; a ``Response``."""
        req = url if isinstance(url, Request) else Request(url, method=method, headers=headers, body=body)
        value = await self._bridge.event(self, {"t": "fetch", "iid": self._iid, "req": _request_dict(req)})
        return _response(await self.ctx._host.settled(value))  # a crash point of rpc:fetch, as a call's (_rpc_method)


JsObject._stub_call = owner_call  # the RPC a stub's call is delivered as (_refs.py)


def _rpc_method(name: str) -> Callable:
    async def method(self: JsObject, *args: Any) -> Any:
        value = await self._bridge.event(self, {"t": "call", "iid": self._iid, "method": name, "args": list(args)})
        # the call's JS ran and its writes are applied, not yet committed: a crash point of task rpc:<name>, as a
        # Python object's awaited storage call is (a crash here drops the writes and fails the caller)
        return await self.ctx._host.settled(value)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The JavaScript method {name}(...): arguments and result cross as JSON."
    return method


class Bridge:
    """One simulation's JavaScript host: the Node process, its live instances and pending promises.

    The object's own tasks it starts are named as fault plans name tasks (``rpc:<what>``): a JS timer
    ``rpc:timer``, an outbound call ``rpc:out:<BINDING>.<method>``, a waitUntil ``rpc:waitUntil``;
    so ``explore`` can crash an object at their awaits as it does at an RPC's."""

    def __init__(self, sim: Any, proc: Any, services: dict[str, Callable], objects: dict[str, Any] | None = None) -> None:
        self.sim = sim
        self.proc = proc
        self.services = services  # binding -> handler(Request) -> Response: the binding's fetch
        self.objects = dict(objects or {})  # binding -> a Python object: its methods are the binding's
        self.logs: list[tuple[int, str, str]] = []  # console output: (virtual ms, level, text)
        self.iids = itertools.count(1)
        self.pids = itertools.count(1)
        self.instances: dict[int, JsObject] = {}
        self.live: dict[tuple[str, str], int] = {}  # (binding, object) -> its newest instance's iid
        self.futures: dict[str, Future] = {}
        self.settled: dict[str, tuple[bool, Any]] = {}  # promises that settled before anything waited for them
        self.kernel = sim.kernel
        self.timers: dict[int, Any] = {}  # JS timer id -> the task sleeping for it
        self.sids = itertools.count(1)
        self.facet_stubs: dict[int, Any] = {}  # stub number (facets.mjs) -> the runtime's FacetStub
        self.facet_last: dict[tuple[int, str], int] = {}  # (parent iid, facet name) -> its newest stub number
        self.facet_classes: dict[str, type] = {}  # JS class name -> its class as a facet
        self.lost: str | None = None  # why the host is gone, once it is
        self.libs = LibraryWatch(sim)  # the schedules libraries keep in their own tables (workers/_libs.py)

    def bind_class(self, binding: str, js_class: str, methods: list[str]) -> type:
        body: dict[str, Any] = {"_bridge": self, "_binding": binding, "_js_class": js_class, "__module__": __name__}
        for m in methods:  # alarm and fetch forward themselves; a name of the Python class's own is not routed
            if m not in ("alarm", "fetch", "ctx", "env") and m.isidentifier() and not hasattr(JsObject, m):
                body[m] = _rpc_method(m)
            elif m.startswith("get ") and m[4:].isidentifier():  # a getter, read by `await stub.NAME` (host.mjs)
                body[m] = _rpc_method(m)
        if "alarm" not in methods:  # a class without alarm(): workerd refuses setAlarm outside its constructor
            body["alarm"] = None
        return type(js_class, (JsObject,), body)

    def facet_class(self, js_class: str, methods: list[str]) -> type:
        """The class a facet of JS class ``js_class`` runs as (one per class, made on first use)."""
        cls = self.facet_classes.get(js_class)
        if cls is None:
            # one binding for every facet class: a facet restarted with another class replaces the old instance
            cls = self.facet_classes[js_class] = self.bind_class(FACET, js_class, methods)
            cls._facet = True
        return cls

    # -- promises and events ---------------------------------------------------------------------
    def future(self, key: str) -> Future:
        fut = self.futures.get(key)
        if fut is None:
            fut = self.futures[key] = Future()
            early = self.settled.pop(key, None)
            if early is not None:
                _settle(fut, *early)
        return fut

    async def event(self, obj: JsObject | None, msg: dict, form: str | None = None) -> Any:
        """Send one event (an RPC, an alarm, a fetch) and await the settling of its promise. Most
        promises settle in the event's own turn: their outcome is taken from ``settled`` at once.
        ``form``: the message's JSON as a %-format of its values in order (pid and now last), for
        messages of ints only, which it makes faster than the encoder."""
        pid = next(self.pids)
        key = "p%d" % pid
        msg["pid"] = pid
        try:
            self.exchange(msg, form)
        except BaseException:
            self.settled.pop(key, None)
            raise
        early = self.settled.pop(key, None)
        if early is None:
            return await self._wait(key)
        if early[0]:
            return early[1]
        raise _js_error(early[1])

    async def _wait(self, key: str) -> Any:
        try:
            return await self.future(key)
        finally:
            self.futures.pop(key, None)

    def exchange(self, msg: dict, form: str | None = None) -> None:
        """Send ``msg``, answer the turn's synchronous reads, then apply its report. A host that died or
        stopped answering raises ``JsHostError`` here and stops the simulation (see ``_lost``)."""
        proc = self.proc
        msg["now"] = self.kernel.now
        try:
            proc.send(msg if form is None else form % _ints(msg))
            while True:
                r = proc.recv()
                t = r["t"]
                if t == "turn":
                    break
                if t != "sync":
                    raise JsHostError(f"the JavaScript host sent an unexpected message {r.get('t')!r}")
                try:
                    for op in r["ops"]:
                        apply_op(self, op)
                    value = apply_op(self, r["op"])
                except Exception as err:  # noqa: BLE001 - the error goes back into JS, thrown where the read was
                    if isinstance(err, WorkerUnsupported):
                        apply_op(self, ["refused", r["op"][1] if len(r["op"]) > 1 else None, err])
                    proc.send({"ok": False, "error": _error_info(err)})
                    continue
                try:
                    proc.send({"ok": True, "value": value})
                except JsValueError as err:  # e.g. a REAL column holding NaN: thrown into JS, not sent
                    proc.send({"ok": False, "error": _error_info(err)})
        except JsHostError as err:
            raise self._lost(err, msg) from None
        self.apply(r)

    def _lost(self, err: JsHostError, msg: dict) -> JsHostError:
        """The host is gone (it died, or ran ``answer_s`` without answering and was stopped). The event's
        caller gets the error, and so does the simulation's run: a microtask raises it out of ``sim.run()``
        (the CLI's exit 2), since an ``alarm()`` that fails this way must not count as a retried failure."""
        if self.lost is None:
            if self.proc.stalled:
                s = self.proc.answer_s
                err = JsHostError(
                    f"{self._doing(msg)} did not finish within {s:g} s of wall-clock time (a synchronous endless loop "
                    "in its JavaScript?): the JavaScript host was stopped and this simulation cannot go on; if the "
                    f"code is only slow, raise ALARMKIT_JSHOST_TIMEOUT_S (seconds, now {s:g})")
            self.lost = str(err)
            self.kernel.call_soon(self._halt)
        return JsHostLost(self.lost)

    def _halt(self) -> None:
        raise JsHostLost(self.lost)

    def _doing(self, msg: dict) -> str:
        """What the message asked of which object, as the error of a stalled host names it."""
        t, iid = msg.get("t"), msg.get("iid")
        obj = self.instances.get(iid) if iid is not None else None
        who = f"{obj._binding}:{obj.ctx.label}" if obj is not None else "the worker"
        if t == "new":
            return f"the constructor of {who}"
        if t == "call":
            return f"{who}.{msg.get('method')}()"
        if t in ("alarm", "fetch"):
            return f"{who}.{t}()"
        if t == "timer":
            return f"a timer callback of {who}"
        return f"{who}, resuming after an awaited call"

    def apply(self, r: dict) -> None:
        """Apply a turn's report (host.mjs leaves out its empty lists; most reports have ops, done or both)."""
        get = r.get
        more = len(r) - 1  # the lists besides ops and done
        ops = get("ops")
        failed = None  # the first write that could not be applied: raised once the rest of the report is
        if ops is not None:
            more -= 1
            for op in ops:
                try:
                    apply_op(self, op)
                except Exception as err:  # noqa: BLE001 - raised below, after the promises, timers and calls
                    failed = failed or _write_error(op, err)
        done = get("done")
        if done is not None:
            more -= 1
        if more:
            for nid, iid, kind in get("waits", ()):
                self._wait_for(f"n{nid}", iid, kind)
        if done is not None:
            futures = self.futures
            for key, ok, value in done:
                fut = futures.get(key)
                if fut is None:  # nothing waits yet: its event (or a wait) takes it from here
                    self.settled.setdefault(key, (ok, value))
                elif not fut.done():
                    _settle(fut, ok, value)
        if more:
            self._apply_more(get)
        if failed is not None:
            raise failed

    def _apply_more(self, get: Callable) -> None:
        for tid in get("clear", ()):
            task = self.timers.pop(tid, None)
            if task is not None and not task.done():
                task.kill(AlarmkitError(f"timer {tid} was cleared"))
        for tid, iid, ms in get("timers", ()):
            self.timers[tid] = self._start(iid, self._timer(tid, iid, ms), "rpc:timer")
        for nid, iid, binding, key, method, args in get("calls", ()):
            what = "facet" if binding == FACET else binding or "storage"
            self._start(iid, self._call(nid, iid, binding, key, method, args), f"rpc:out:{what}.{method}")

    def _start(self, iid: int | None, coro: Any, name: str) -> Any:
        if iid is None:
            return self.sim.spawn(coro, name)
        obj = self.instances.get(iid)
        if obj is None:
            coro.close()
            return None
        return obj.ctx.start(coro, name)

    def _wait_for(self, key: str, iid: int | None, kind: str) -> None:
        obj = None if iid is None else self.instances.get(iid)
        if obj is None:
            if iid is None:
                self.sim.spawn(self._wait(key), "waitUntil")
            return
        if kind == "bcw":
            obj.ctx.block_concurrency_while(lambda: self._wait(key))
        else:
            obj.ctx.start(self._wait(key), "rpc:waitUntil")  # ctx.wait_until, named as fault plans accept

    async def _timer(self, tid: int, iid: int | None, ms: int) -> None:
        await self.kernel.sleep(ms)
        self.timers.pop(tid, None)
        self._journaled(iid, {"t": "timer", "id": tid, "iid": iid})  # host.mjs takes the timer's own; iid names it in errors

    def _journaled(self, iid: int | None, msg: dict) -> None:
        """``exchange(msg)`` from one of the object's own tasks (a timer, an outbound call's answer), where
        nothing awaits its outcome: a write of the turn that could not be applied is journaled as a
        console error of the object, not lost with the task. A host that is gone still stops the run."""
        try:
            self.exchange(msg)
        except (JsHostError, JsValueError):  # gone; or a value that cannot cross, nothing sent: the caller's
            raise
        except AlarmkitError as err:
            apply_op(self, ["console", iid, "error", f"alarmkit: {err}"])

    async def _call(self, nid: int, iid: int | None, binding: str, key: str | None, method: str, args: list) -> None:
        try:
            value = await self._outbound(None if iid is None else self.instances.get(iid), binding, key, method, args)
            ok = True
        except Exception as err:  # noqa: BLE001 - it is thrown into the JS caller
            ok, value = False, _error_info(err)
            if isinstance(err, WorkerUnsupported):  # journaled as the host's own are, caught in JS or not
                apply_op(self, ["refused", iid, err])
        try:
            self._journaled(iid, {"t": "settle", "nid": nid, "iid": iid, "ok": ok, "value": value})
        except JsValueError as err:  # the result cannot cross (nothing was sent): the JS caller gets the error instead
            self._journaled(iid, {"t": "settle", "nid": nid, "iid": iid, "ok": False, "value": _error_info(err)})

    async def _outbound(self, obj: JsObject | None, binding: str | None, key: str | None, method: str, args: list) -> Any:
        if binding is None:  # storage.sync(): this task's suspension is a commit point, then it resolves
            if obj is None:
                raise AlarmkitError("storage.sync() outside a Durable Object")
            return await obj.ctx.storage.sync()
        if binding == "$stub":  # a call on a stub of an RpcTarget or function passed by reference (host/stubs.mjs)
            return await stub_call(self, key, method, args)
        if binding == FACET:  # a call into a facet, through the runtime's stub (its checks, its break)
            stub = self.facet_stubs[key]
            if method.startswith("_"):  # the stub's own attributes are not the facet's methods
                raise TypeError(f'The RPC receiver does not implement the method "{method}".')
            if method == "fetch":
                d = args[0]
                res = await stub.fetch(d["url"], d["method"], d["headers"], d["body"])
                return _fetched(res)
            return await getattr(stub, method)(*args)
        if binding in self.services or binding in self.objects:  # a stub the user gave
            if obj is not None:  # an object's outbound call is a declared effect: journaled, and faults strike there
                # workerd's output gate holds a subrequest until the writes before it are confirmed
                # (src/workerd/io/io-gate.h): the request waits for the turn's commit (storage.sync()
                # suspends until it), so a crash before the commit loses the writes and the request both
                await self.sim.kernel.checkpoint(None)
                await obj.ctx.storage.sync()
                key_of = _effect_key(method, args)
                await obj.ctx.effect(binding, key_of, method=args[0]["method"] if method == "fetch" else method)
            return await self._python_binding(binding, method, args)
        stub = self.sim.namespaces[binding].get(key)
        if method in RESERVED:
            raise TypeError(f"'{method}' is a reserved method and cannot be called over RPC.")
        if method.startswith("_"):  # callable in workerd; the Python stub keeps `_` names its own
            if not callable(stub._host.namespace.cls.__dict__.get(method)):
                raise TypeError(f'The RPC receiver does not implement the method "{method}".')
            return await self.sim.rpc(stub._host, method, tuple(args), {})
        if method == "fetch":
            d = args[0]
            res = await stub.fetch(d["url"], d["method"], d["headers"], d["body"])
            return _fetched(res)
        if not callable(getattr(stub._host.namespace.cls, method, None)):  # workerd's text, thrown into the JS caller
            raise TypeError(f'The RPC receiver does not implement the method "{method.removeprefix("get ")}".')
        return await getattr(stub, method)(*args)

    async def _python_binding(self, binding: str, method: str, args: list) -> Any:
        """Call the Python stub bound as ``binding``: a handler is its ``fetch``; an object's methods are its own."""
        target = self.services.get(binding)
        if target is None:
            fn = getattr(self.objects[binding], method, None) if not method.startswith("_") else None
            if not callable(fn):
                raise WorkerUnsupported(
                    f"env.{binding}.{method}: the Python object bound as {binding} ({type(self.objects[binding]).__name__}) "
                    f"has no method {method!r}; add it to the object you pass in bindings={{{binding!r}: ...}}")
            target = fn
        elif method != "fetch":
            raise WorkerUnsupported(f"env.{binding}.{method}: {binding} is bound to a fetch handler, which has only "
                                    f"fetch(); bind an object with a {method}() method instead")
        if method == "fetch":
            d = args[0]
            out = target(Request(d["url"], d["method"], d["headers"], d["body"]))
        else:
            out = target(*args)
        if inspect.isawaitable(out):
            out = await out
        return _response_dict(out, binding) if method == "fetch" else out
