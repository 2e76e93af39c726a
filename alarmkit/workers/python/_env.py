"""A Python Worker's ``env``: Durable Object namespaces (``getByName``, ``idFromName``, ``get``,
``newUniqueId``, ``idFromString``), their stubs, ``vars``, the Python objects given as bindings, and the
bindings refused by name.

A stub call starts at once, as a JS promise does (workerd's ``makeEntrypointProxyHandler`` calls into
Python when the method is called, not when awaited): it is spawned on the simulation and the call returns
its awaitable. Arguments and the result cross as the SDK converts them (``_convert``); a method the class
does not have fails the awaitable with workerd's ``TypeError``.
"""

from __future__ import annotations

import inspect
import weakref
from types import FunctionType
from typing import Any

from ...runtime import Future
from ._convert import from_rpc, to_rpc
from ._state import JsId, _then

from .._base import Env as JsEnv  # noqa: E402 - one env class for both hosts

__all__ = ["JsEnv", "JsNamespace", "JsStub", "rpc_methods", "relaxed"]


def rpc_methods(cls: type) -> list[str]:
    """The methods RPC reaches: public plain functions of the class and its bases, as workerd's
    ``collect_methods`` (src/pyodide/internal/introspection.py) lists them."""
    def plain(name: str) -> bool:
        for base in cls.__mro__:
            if name in base.__dict__:
                return isinstance(base.__dict__[name], FunctionType)
        return False

    return sorted(n for n in dir(cls) if not n.startswith("_") and plain(n))


_TAKES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> positional args it takes (None: any)


def relaxed(fn: Any, *args: Any) -> Any:
    """Pyodide's ``callRelaxed``: call ``fn`` with as many of ``args`` as it takes (how workerd calls
    ``alarm`` and ``fetch``: python-entrypoint-helper.ts, ``doPyCallHelper(true, ...)``). The count is
    read once per function (``inspect.signature`` per call cost 22 % of an alarm, bench_pyworker.py)."""
    key = getattr(fn, "__func__", fn)
    try:
        n = _TAKES[key]
    except (KeyError, TypeError):
        n = _takes(fn)
        try:
            _TAKES[key] = n
        except TypeError:  # not weak-referenceable: a builtin
            pass
    return fn(*args) if n is None else fn(*args[:n])


def _takes(fn: Any) -> int | None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _failed(err: BaseException) -> Future:
    fut = Future()
    fut.set_exception(err)
    return fut


class JsStub:
    """A stub: ``await stub.method(*args)`` (RPC), ``await stub.fetch(request_or_url, ...)``, ``id``, ``name``."""

    def __init__(self, ns: JsNamespace, jid: JsId) -> None:
        self._ns = ns
        self.id = jid
        self.name = jid.name
        self._stub = ns._ns.get(str(jid))  # the simulation's stub

    @property
    def _host(self) -> Any:
        """The object behind the stub, so ``sim.inspect(stub)`` and ``sim.evict(stub)`` take this stub too."""
        return self._stub._host

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)
        ns = self._ns

        def call(*args: Any, **kwargs: Any) -> Any:
            if method not in ns._methods:
                return _failed(TypeError(f"The RPC receiver does not implement the method \"{method}\"."))
            try:  # the caller's python_to_rpc, then the callee's python_from_rpc
                sent = [to_rpc(a) for a in args] + ([to_rpc(kwargs)] if kwargs else [])
            except TypeError as err:
                return _failed(err)
            task = ns._sim.spawn(getattr(self._stub, method)(*[from_rpc(a) for a in sent]), f"rpc:{method}")
            return _then(task, lambda v: from_rpc(to_rpc(v)))

        return call

    def fetch(self, input: Any, **options: Any) -> Any:
        """The object's ``fetch(request)`` (called relaxed); resolves to a ``FetchResponse``."""
        sdk = self._ns._worker.sdk
        try:
            request = input if isinstance(input, sdk.Request) and not options else sdk.Request(input, **options)
        except Exception as err:  # noqa: BLE001 - a bad request fails the promise, as in JS
            return _failed(err)
        if "fetch" not in self._ns._methods:
            return _failed(TypeError(f"{self._ns._cls.__name__} has no fetch() handler; define async def fetch(self, request)"))
        task = self._ns._sim.spawn(self._stub.fetch(request), "rpc:fetch")
        return _then(task, sdk.fetch_response)

    def __repr__(self) -> str:
        return f"<stub {self._ns._binding}:{str(self.id)}>"


class JsNamespace:
    """A Durable Object namespace binding."""

    def __init__(self, worker: Any, binding: str, ns: Any, cls: type) -> None:
        self._worker = worker
        self._sim = worker.sim
        self._binding = binding
        self._ns = ns
        self._cls = cls
        self._methods = set(rpc_methods(cls))
        self._ids: dict[str, JsId] = {}

    def _id(self, object_name: str, name: str | None) -> JsId:
        unique = name is None
        if unique:
            self._worker.unnamed.setdefault(self._binding, set()).add(object_name)
        jid = JsId(self._binding, object_name, name, unique)
        self._ids.setdefault(jid.toString(), jid)
        return jid

    def idFromName(self, name: Any) -> JsId:
        if not isinstance(name, str) or not name:
            raise TypeError(f"idFromName() takes non-empty text, got {name!r:.60}")
        return self._id(name, name)

    def newUniqueId(self, *options: Any, **kw: Any) -> JsId:
        hexname = f"{self._sim.kernel.rng.getrandbits(256):064x}"  # the seeded source: the same seed, the same ids
        return self._id(hexname, None)

    def idFromString(self, hexid: Any) -> JsId:
        if not isinstance(hexid, str) or len(hexid) != 64 or any(c not in "0123456789abcdef" for c in hexid):
            raise TypeError(f"Invalid Durable Object ID: must be 64 hex digits, got {hexid!r:.80}")
        known = self._ids.get(hexid)
        return known if known is not None else self._id(hexid, None)

    def get(self, jid: Any, *options: Any, **kw: Any) -> JsStub:
        if not isinstance(jid, JsId):
            raise TypeError(f"get() takes an id from idFromName/newUniqueId/idFromString, got {jid!r:.60}; "
                            "for a name use getByName(name)")
        return JsStub(self, jid)

    def getByName(self, name: Any, *options: Any, **kw: Any) -> JsStub:
        return JsStub(self, self.idFromName(name))

    def jurisdiction(self, name: str) -> JsNamespace:
        return self

    def __repr__(self) -> str:
        return f"<DurableObjectNamespace {self._binding}: {self._cls.__name__}>"
