"""A user's own JavaScript or TypeScript Worker under the virtual clock (docs/workers.md, "JavaScript and
TypeScript workers").

``load(sim, path, bindings, compat)`` (what ``sim.load_worker("x.ts")`` calls, through
``alarmkit.workers.load_worker``) bundles the module with esbuild (TypeScript stripped, as wrangler does),
runs it in one Node.js process for the simulation, binds each Durable Object class named in ``bindings``
as a namespace of the simulation, and returns a ``JsWorker``: the shared ``alarmkit.workers.Worker``,
so drive scripts, ``run_worker``, ``explore_worker`` and the CLI treat it as they treat a Python worker.
"""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import Any, Callable

from ...errors import AlarmkitError, JsHostError, WorkerError
from .._base import Env as JsEnv, Request, Response, RefusedBinding, Var, Worker, names
from ._bridge import Bridge, _request_dict, _response
from ._node import NodeProcess, cache_dir, find_esbuild, find_node, install

__all__ = ["load", "install", "available", "ensure", "JsWorker", "Worker", "Request", "Response"]

SUFFIXES = (".js", ".mjs", ".ts", ".mts", ".jsx", ".tsx")  # what wrangler's main may be, esbuild's loaders


def available() -> str | None:
    """None when the JavaScript host can run here; else the reason it cannot (for skips and messages)."""
    try:
        find_node()
    except JsHostError as err:
        return str(err)
    if find_esbuild() is None:
        return f"esbuild is not installed in {cache_dir()} (python -c 'import alarmkit.workers.js as j; j.install()')"
    return None


def ensure() -> tuple[str, Path]:
    """Node (18+) and esbuild (installed from npm into the cache if missing): ``(node, esbuild entry)``;
    raises ``JsHostError`` naming what is missing and how to get it."""
    node = find_node()
    return node, find_esbuild() or install()


class JsNamespace:
    """``env.BINDING`` from Python: ``getByName(name)``, ``get(name)`` and ``idFromName(name)``; the stubs are
    the simulation's (``sim.inspect``, ``sim.evict`` and drive expectations take them)."""

    def __init__(self, binding: str, ns: Any) -> None:
        self._binding = binding
        self._ns = ns

    def idFromName(self, name: str) -> str:  # noqa: N802 - the JavaScript name
        """The id of the object named ``name`` (from Python an id is its name; ``get`` takes either)."""
        return name

    def get(self, name: str) -> Any:
        return self._ns.get(name)

    def getByName(self, name: str) -> Any:  # noqa: N802 - the JavaScript name
        return self._ns.get(name)

    get_by_name = getByName

    def __repr__(self) -> str:
        return f"<DurableObjectNamespace {self._binding}: {self._ns.cls.__name__}>"


class JsWorker(Worker):
    """A loaded JavaScript or TypeScript worker (``alarmkit.workers.Worker``): also ``logs`` (what it wrote
    with ``console``: ``(t_ms, level, text)``, the first 100,000 lines; the journal has them all)."""

    language = "js"

    def __init__(self, sim: Any, path: Path, env: Any, classes: dict[str, str], compat: str, bridge: Bridge,
                 methods: dict[str, list[str]], has_fetch: bool) -> None:
        super().__init__(sim, str(path), env, classes, compat)
        self._bridge = bridge
        self._methods = methods
        self._has_fetch = has_fetch

    @property
    def logs(self) -> list[tuple[int, str, str]]:
        return self._bridge.logs

    def methods(self, binding: str) -> list[str] | None:
        """The methods of ``binding``'s class, read from the class's prototype chain when the module loaded."""
        return self._methods.get(binding)

    def _dispatch(self, request: Request) -> Any:
        return self._fetch(request)

    async def _fetch(self, request: Request) -> Response:
        if not self._has_fetch:
            raise WorkerError(f"{self.path} has no default export with a fetch handler; export default "
                              "{ fetch(request, env, ctx) { ... } }, or call its Durable Objects through worker.env")
        return _response(await self._bridge.event(None, {"t": "fetch", "iid": None, "req": _request_dict(request)}))


def _close(proc: NodeProcess) -> None:
    proc.close()


def _json_var(name: str, value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise WorkerError(f"vars.{name} cannot cross to JavaScript (JSON values only), got {value!r:.60}") from None
    return value


def load(sim: Any, path: str | os.PathLike, bindings: dict[str, Any] | None = None, compat: str | None = None,
         flags: list[str] | tuple[str, ...] = (), build: dict | None = None) -> JsWorker:
    """Load the worker module at ``path`` into ``sim``. ``bindings`` maps an env name to a Durable Object
    class the module exports (``{"LEDGER": "Ledger"}``), to a Python handler stubbing a service's ``fetch``
    (``{"API": lambda request: Response("ok")}``), to any other Python object (the worker calls its methods:
    ``await env.KV.get("k")``, arguments and results as JSON), to a ``Var`` (a wrangler ``vars`` value) or
    to a ``RefusedBinding`` (refused by name when the worker touches it). ``compat`` is a compatibility date
    (``"2026-09-01"``), applied to the simulation's profile before anything runs. ``flags``: wrangler's
    ``compatibility_flags`` (``nodejs_compat`` lets the module import Node's built-ins, as workerd does).
    ``build``: the wrangler file's ``define`` and ``alias`` for the bundle (``{"define": {...}, "alias": {...}}``).

    Raises ``JsHostError`` (Node missing or older than 18, esbuild not installable, a module that does not
    build or load, a class that is not exported) and ``WorkerError`` for bad arguments."""
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise WorkerError(f"a JavaScript worker is a {', '.join(SUFFIXES)} file, got {str(path)!r}")
    if not p.is_file():
        raise WorkerError(f"worker module {str(path)!r} does not exist (or is not a file)")
    classes: dict[str, str] = {}
    services: dict[str, Callable] = {}
    objects: dict[str, Any] = {}
    jsvars: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for name, value in dict(bindings or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            raise WorkerError(f"binding names are identifiers such as 'LEDGER', got {name!r}")
        if isinstance(value, Var):
            jsvars[name] = _json_var(name, value.value)
        elif isinstance(value, RefusedBinding):  # before callable(): a refused binding refuses being called too
            refused[name] = str(value._refuse())
        elif isinstance(value, str):
            if not value.isidentifier():
                raise WorkerError(f"bindings[{name!r}] names a class as an identifier ('Ledger'), got {value!r:.60}")
            classes[name] = value
        elif isinstance(value, type):
            raise WorkerError(f"bindings[{name!r}] is a Python class ({value.__name__}); a JavaScript worker's Durable "
                              f"Object classes are named as text, e.g. bindings={{{name!r}: 'Ledger'}}")
        elif callable(value):
            services[name] = value
        elif value is None or isinstance(value, (int, float, bool, list, dict)):
            jsvars[name] = _json_var(name, value)  # a plain value, as a wrangler var would be
        else:
            objects[name] = value
        if name in classes and name in sim.namespaces:
            raise WorkerError(f"binding {name!r} is already a namespace of this simulation; choose another name")
    if getattr(sim, "_js_bridge", None) is not None:
        raise WorkerError("this simulation already runs a JavaScript worker (one per simulation); make a new Simulation")
    if compat is not None and compat != sim.profile.compatibility_date:
        sim.configure(compatibility_date=compat)
    node, esbuild = ensure()
    proc = NodeProcess(node)
    weakref.finalize(sim, _close, proc)
    bridge = Bridge(sim, proc, services, objects)
    proc.send({"t": "load", "entry": str(p.resolve()), "esbuild": str(esbuild), "bindings": classes,
               "flags": [str(f) for f in flags], "build": dict(build or {}), "compat": sim.profile.compatibility_date, "services": sorted(services), "objects": sorted(objects), "vars": jsvars, "refused": refused,
               "seed": int(sim.seed), "start": sim.start_ms, "now": sim.now})
    answer = proc.recv()
    if answer["t"] == "error":
        proc.close()
        err = answer["error"]
        what = "does not build" if err.get("name") == "BuildError" else "could not be loaded"
        if err.get("name") == "BindingError":
            raise JsHostError(err["message"])
        raise JsHostError(f"worker module {str(path)!r} {what}: {err.get('name')}: {err.get('message')}")
    sim._js_bridge = bridge
    env: dict[str, Any] = {}
    for binding, js_class in classes.items():
        cls = bridge.bind_class(binding, js_class, answer["classes"][binding])
        env[binding] = JsNamespace(binding, sim.namespace(binding, cls))
    env.update(jsvars)
    env.update(services)
    env.update(objects)
    env.update({k: v for k, v in dict(bindings or {}).items() if isinstance(v, RefusedBinding)})
    return JsWorker(sim, p.resolve(), JsEnv(env), classes, compat or sim.profile.compatibility_date, bridge,
                    dict(answer["classes"]), bool(answer["fetch"]))
