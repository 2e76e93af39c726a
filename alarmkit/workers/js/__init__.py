"""A user's own JavaScript or TypeScript Worker under the virtual clock (docs/workers-js.md).

``load(sim, path, bindings, compat)`` bundles the module with esbuild (TypeScript stripped, as
wrangler does), runs it in one Node.js process for the simulation, binds each Durable Object class
named in ``bindings`` as a namespace of the simulation, and returns a ``Worker`` whose ``fetch``
calls the module's default export and whose ``env`` gives stubs of its objects.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any, Callable

from ...errors import AlarmkitError, JsHostError
from ._bridge import Bridge, _request_dict, _response
from ._compat import Request, Response, Worker
from ._node import NodeProcess, cache_dir, find_esbuild, find_node, install

__all__ = ["load", "install", "available", "ensure", "Worker", "Request", "Response"]

SUFFIXES = (".js", ".mjs", ".ts", ".mts")


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
    """``env.BINDING`` from Python: ``get(name)``, ``getByName(name)`` and ``idFromName(name)``."""

    def __init__(self, ns: Any) -> None:
        self._ns = ns

    def idFromName(self, name: str) -> str:  # noqa: N802 - the JavaScript name
        return name

    def get(self, name: str) -> Any:
        return self._ns.get(name)

    def getByName(self, name: str) -> Any:  # noqa: N802 - the JavaScript name
        return self._ns.get(name)

    get_by_name = getByName


class JsEnv:
    def __init__(self, namespaces: dict[str, JsNamespace]) -> None:
        self.__dict__.update(namespaces)

    def __repr__(self) -> str:
        return f"<env {sorted(self.__dict__)}>"


def _close(proc: NodeProcess) -> None:
    proc.close()


def load(sim: Any, path: str | os.PathLike, bindings: dict[str, Any] | None = None, compat: str | None = None) -> Worker:
    """Load the worker module at ``path`` into ``sim``. ``bindings`` maps an env name to a Durable
    Object class the module exports (``{"LEDGER": "Ledger"}``) or to a Python handler stubbing an
    outbound service (``{"API": lambda request: Response("ok")}``). ``compat`` is a compatibility
    date (``"2026-09-01"``), applied to the simulation's profile before anything runs.

    Raises ``JsHostError`` (Node missing or older than 18, esbuild not installable, a module that does
    not build or load, a class that is not exported) and ``AlarmkitError`` for bad arguments."""
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise AlarmkitError(f"a JavaScript worker is a {', '.join(SUFFIXES)} file, got {str(path)!r}")
    if not p.is_file():
        raise AlarmkitError(f"worker module {str(path)!r} does not exist (or is not a file)")
    bindings = dict(bindings or {})
    classes: dict[str, str] = {}
    services: dict[str, Callable] = {}
    for name, value in bindings.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise AlarmkitError(f"binding names are identifiers such as 'LEDGER', got {name!r}")
        if isinstance(value, str) and value.isidentifier():
            classes[name] = value
        elif callable(value):
            services[name] = value
        else:
            raise AlarmkitError(f"bindings[{name!r}] must name an exported class ('Ledger') or be a handler "
                                f"(request -> Response), got {value!r}")
        if name in sim.namespaces:
            raise AlarmkitError(f"binding {name!r} is already a namespace of this simulation; choose another name")
    if getattr(sim, "_js_bridge", None) is not None:
        raise AlarmkitError("this simulation already runs a JavaScript worker (one per simulation); make a new Simulation")
    if compat is not None and compat != sim.profile.compatibility_date:
        sim.configure(compatibility_date=compat)
    node, esbuild = ensure()
    proc = NodeProcess(node)
    weakref.finalize(sim, _close, proc)
    bridge = Bridge(sim, proc, services)
    proc.send({"t": "load", "entry": str(p.resolve()), "esbuild": str(esbuild), "bindings": classes,
               "services": sorted(services), "seed": int(sim.seed), "start": sim.start_ms, "now": sim.now})
    answer = proc.recv()
    if answer["t"] == "error":
        proc.close()
        err = answer["error"]
        what = "does not build" if err.get("name") == "BuildError" else "could not be loaded"
        if err.get("name") == "BindingError":
            raise JsHostError(err["message"])
        raise JsHostError(f"worker module {str(path)!r} {what}: {err.get('name')}: {err.get('message')}")
    sim._js_bridge = bridge
    spaces = {}
    for binding, js_class in classes.items():
        cls = bridge.bind_class(binding, js_class, answer["classes"][binding])
        spaces[binding] = JsNamespace(sim.namespace(binding, cls))
    has_fetch = answer["fetch"]

    async def fetch(req: Request) -> Response:
        if not has_fetch:
            raise AlarmkitError(f"worker module {str(path)!r} has no default export with a fetch handler")
        return _response(await bridge.event(None, {"t": "fetch", "iid": None, "req": _request_dict(req)}))

    return Worker(JsEnv(spaces), fetch)
