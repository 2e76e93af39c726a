"""The Python Workers host: ``load(sim, path, bindings, compat)`` imports a Cloudflare Python Worker's module
unchanged (``_importer``: isolated, with the worker's own ``workers``, ``js``, ``pyodide``, ``time``,
``datetime`` and ``asyncio``) and binds its Durable Object classes as namespaces of the simulation.

How workerd runs the same code (src/pyodide/python-entrypoint-helper.ts, src/pyodide/internal/
introspection.py): a Durable Object class is a subclass of ``workers.DurableObject`` found at the module's
top level; its constructor gets ``(ctx, env)``; ``alarm`` and ``fetch`` are called *relaxed* (with as many
arguments as they take: ``async def alarm(self)`` and ``alarm(self, alarm_info)`` both work; ``alarm_info``
has ``retryCount`` and ``isRetry``); every other public plain function is an RPC method whose arguments and
result pass through ``python_from_rpc``/``python_to_rpc``. The default entrypoint is a ``WorkerEntrypoint``
subclass named ``Default`` (or a top-level ``on_fetch(request, env, ctx)``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from ...errors import WorkerError
from ...kernel import over_memory_limit, over_wall_limit
from .._base import Request as BaseRequest, Response as BaseResponse, Var, Worker, names
from ._convert import JsDict
from ._env import JsEnv, JsNamespace, relaxed, rpc_methods
from ._contain import STATE, MemoryLimit, WallClockLimit, gate, install
from ._noloop import without_loop
from ._guard import gate_steps, guarded, printer, where_stopped
from ._importer import Isolated
from ._modules import make_modules
from ._sdk import make_sdk
from ._state import ExecutionContext, JsState

__all__ = ["load", "PythonWorker"]


class PythonWorker(Worker):
    """A loaded Python Worker (``Worker``): also ``module`` (its entry module, isolated), ``sdk`` (its
    ``workers`` module) and ``logs`` (what it wrote with ``print`` or ``js.console``: ``(t_ms, level, text)``,
    the first 100,000 lines; every line is a ``console`` event in the journal too)."""

    language = "python"

    def __init__(self, sim: Any, path: Path, compat: str) -> None:
        super().__init__(sim, str(path), None, {}, compat)
        self.logs: list[tuple[int, str, str]] = []
        self.sdk = make_sdk(self)
        self.sdk.__dict__["_worker"] = self
        self._classes: dict[str, type] = {}
        self.unnamed: dict[str, set[str]] = {}  # objects made from newUniqueId/idFromString, by binding
        self.module: Any = None

    def methods(self, binding: str) -> list[str] | None:
        cls = self._classes.get(binding)
        return None if cls is None else rpc_methods(cls)

    async def _handle(self, request: BaseRequest) -> BaseResponse:
        mod, sdk = self.module, self.sdk
        py_request = sdk.Request(request)
        entry = getattr(mod, "Default", None)
        if isinstance(entry, type) and issubclass(entry, sdk.WorkerEntrypoint):
            handler = getattr(entry(ExecutionContext(self.sim), self.env), "fetch", None)
            if handler is None:
                raise WorkerError(f"{self.path}: class Default has no fetch(self, request); define it to serve requests")
            result = guarded("Default.fetch()", None, relaxed, handler, py_request)
        elif callable(getattr(mod, "on_fetch", None)):
            result = guarded("on_fetch()", None, relaxed, mod.on_fetch, py_request, self.env, ExecutionContext(self.sim))
        else:
            raise WorkerError(f"{self.path} has no default entrypoint: define class Default(WorkerEntrypoint) with "
                              "async def fetch(self, request), or call its Durable Objects through worker.env")
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, sdk.FetchResponse):
            raise TypeError(f"the worker's fetch returned {type(result).__name__}, not a Response")
        return BaseResponse(result._data, result.status, result.headers)

    def _dispatch(self, request: BaseRequest) -> Any:
        return self._handle(request)


def _adapt(worker: PythonWorker, binding: str, cls: type) -> type:
    """The class the simulation instantiates for ``cls``: same name, its constructor given the JS-named
    ``ctx`` and the worker's ``env``; ``alarm`` and ``fetch`` called relaxed, as workerd calls them."""
    compat = worker.compatibility_date

    name = cls.__name__

    def __init__(self: Any, ctx: Any, env: Any) -> None:
        unique = str(ctx.id) in worker.unnamed.get(binding, ())
        self._alarmkit_ctx = ctx  # the simulation's ctx, for the console lines of its code (_guard)
        guarded(f"{name}() (its constructor)", ctx, cls.__init__, self, JsState(ctx, binding, compat, unique), worker.env)

    body: dict[str, Any] = {"__init__": __init__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                            "__doc__": cls.__doc__}
    if callable(getattr(cls, "alarm", None)):
        def alarm(self: Any, info: Any) -> Any:
            return guarded(f"{name}.alarm()", _ctx(self), relaxed, cls.alarm.__get__(self),
                           JsDict(retryCount=info.retry_count, isRetry=info.is_retry, scheduledTime=float(info.scheduled_time)))
        body["alarm"] = alarm
    if callable(getattr(cls, "fetch", None)):
        def fetch(self: Any, request: Any) -> Any:
            return guarded(f"{name}.fetch()", _ctx(self), relaxed, cls.fetch.__get__(self), request)
        body["fetch"] = fetch
    for method in rpc_methods(cls):
        if method not in body:
            body[method] = _rpc(name, method, getattr(cls, method))
    return type(cls.__name__, (cls,), body)


def _ctx(obj: Any) -> Any:
    return getattr(obj, "_alarmkit_ctx", None)


def _rpc(name: str, method: str, fn: Any) -> Any:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return guarded(f"{name}.{method}()", _ctx(self), lambda: fn(self, *args, **kwargs))

    call.__name__ = call.__qualname__ = method
    call.__doc__ = fn.__doc__
    return call


def load(sim: Any, path: Path, bindings: dict[str, Any], compat: str) -> PythonWorker:
    """Import the worker at ``path`` and bind it into ``sim`` (see the module docstring). ``bindings``: a
    binding name -> a Durable Object class name (or the class) of the module, or any other value, which the
    worker sees as that binding. ``WorkerError`` naming what is wrong."""
    path = Path(path).resolve()
    install()  # the audit hook that keeps the worker's code in the simulation (_contain)
    worker = PythonWorker(sim, path, compat)
    shims = make_modules(worker, worker.sdk)
    isolated = Isolated(path.parent, shims, printer(worker))
    outer, STATE.sim = STATE.sim, sim  # a refusal the module catches at its top is journaled at the load's time
    try:
        worker.module = mod = gate(without_loop(isolated.load_entry), sim.wall_limit_s, sim.memory_limit_mb, path)
    except MemoryLimit as err:
        where, err.__traceback__ = where_stopped(err), None
        raise WorkerError(str(over_memory_limit(f"importing {path}", sim.memory_limit_mb or 0, STATE.grew_mb, where,
                                                "the worker was not loaded"))) from None
    except WallClockLimit as err:
        raise WorkerError(str(over_wall_limit(f"importing {path}", sim.wall_limit_s or 0, where_stopped(err),
                                              "the worker was not loaded"))) from None
    finally:
        STATE.sim = outer
    gate_steps(sim)
    base = worker.sdk.DurableObject
    exported = {k: v for k, v in vars(mod).items() if isinstance(v, type) and issubclass(v, base) and v is not base}
    env: dict[str, Any] = {}
    for name, value in bindings.items():
        if isinstance(value, Var):  # a wrangler ``vars`` entry: the value itself
            env[name] = value.value
            continue
        if isinstance(value, str):
            value = exported.get(value) or getattr(mod, value, None)
            if value is None:
                raise WorkerError(f"binding {name}: {path.name} has no class {bindings[name]!r}; its Durable Object "
                                  f"classes: {names(exported)}")
            if not isinstance(value, type):
                raise WorkerError(f"binding {name}: {bindings[name]!r} in {path.name} is a {type(value).__name__}, not "
                                  f"a Durable Object class; its Durable Object classes: {names(exported)}")
        if isinstance(value, type):
            if not issubclass(value, base):
                raise WorkerError(f"binding {name}: {value.__name__} is not a Durable Object class (it must subclass "
                                  f"workers.DurableObject); its Durable Object classes: {names(exported)}")
            adapted = _adapt(worker, name, value)
            worker._classes[name] = value
            worker.classes[name] = value.__name__
            env[name] = JsNamespace(worker, name, sim.namespace(name, adapted), adapted)
        else:
            env[name] = value
    worker.env = JsEnv(env)
    return worker

