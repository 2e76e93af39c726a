"""Your own worker under the virtual clock: a Cloudflare Worker's module, loaded unchanged.

The interface (shared by the Python host, ``alarmkit.workers.python``, and the JS/TS host,
``alarmkit.workers.js``):

- ``Simulation.load_worker(path, bindings=None, wrangler=None, compatibility_date=None)`` calls
  ``load_worker(sim, ...)`` here, which dispatches on the suffix: ``.py`` ->
  ``alarmkit.workers.python.load(sim, path, bindings, compat)``; ``.js .mjs .ts .mts`` ->
  ``alarmkit.workers.js.load(sim, path, bindings, compat)``. ``bindings`` maps a binding name to a
  Durable Object class name in the module (or the class), or to any Python object, which the worker
  sees as that binding (a fake for a KV namespace, an outbound API...). ``wrangler`` (a path) adds
  the Durable Object bindings, ``vars`` and ``compatibility_date`` of a wrangler.jsonc/.json/.toml
  (``alarmkit.workers.wrangler``); ``bindings`` given too override its entries. ``path`` may be
  omitted when the wrangler file names ``main``.
- Both hosts return a ``Worker`` (``alarmkit.workers._base``): ``.env`` (namespaces with
  ``getByName``, ``idFromName``, ``get``; stubs whose RPC methods and ``.fetch(request)`` return
  awaitables driven by ``sim.call``/``sim.spawn``), ``.fetch(url, method=, headers=, body=)`` ->
  ``Response`` (``.status``, ``.text()``, ``.json()``), ``.request(...)`` (the awaitable of one
  request), ``.stub(binding, name)``, ``.check_method(binding, method)``, ``.classes``.
- Drive scripts (``alarmkit.workers.drive``): ``load_drive(path)``, ``run_drive(worker, drive)``; a whole
  run as a ``RunResult`` (``run_worker``) or an exploration (``explore_worker``): ``alarmkit.workers.runs``.
- The CLI (``alarmkit.workers.command``): ``alarmkit worker ENTRY [--wrangler F] --drive F --db J
  [--report out.html]`` and ``alarmkit explore --worker ENTRY --drive F --invariant ...``.

Every error is an ``AlarmkitError``: ``WorkerError`` (cannot load as given), ``WorkerUnsupported``
(something the simulation cannot run, named with how to stub it), ``DriveError``. See docs/workers.md.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..errors import DriveError, WorkerError, WorkerUnsupported
from ._base import Headers, RefusedBinding, Request, Response, Var, Worker
from .drive import DriveResult, DriveScript, load_drive, parse_drive, run_drive
from .runs import explore_worker, run_worker
from .wrangler import WranglerConfig, read_wrangler

__all__ = [
    "load_worker", "Worker", "Request", "Response", "Headers", "DriveScript", "DriveResult", "load_drive",
    "parse_drive", "run_drive", "WranglerConfig", "read_wrangler", "WorkerError", "WorkerUnsupported", "DriveError",
    "SUFFIXES", "RefusedBinding", "Var", "run_worker", "explore_worker", "example",
]

SUFFIXES = {".py": "python", ".js": "js", ".mjs": "js", ".ts": "js", ".mts": "js"}
DEFAULT_COMPAT = "2026-11-17"  # the compatibility date of the workerd alarmkit is calibrated against


def load_worker(sim: Any, path: str | Path | None = None, bindings: dict | None = None,
                wrangler: str | Path | None = None, compatibility_date: str | None = None) -> Worker:
    """Load the worker module at ``path`` into ``sim`` (see the module docstring); ``WorkerError`` when
    the file, a class or a binding is missing or wrong, or the module does not import."""
    merged: dict[str, Any] = {}
    compat = None
    cfg = None
    if wrangler is not None:
        cfg = read_wrangler(wrangler)
        merged.update(cfg.durable_objects)
        merged.update({k: Var(v) for k, v in cfg.vars.items()})
        merged.update({name: RefusedBinding(name, what) for name, what in cfg.other.items()})
        compat = cfg.compatibility_date
        if path is None and cfg.main:
            path = Path(cfg.path).parent / cfg.main
    if bindings is not None:
        if not isinstance(bindings, dict) or not all(isinstance(k, str) and k.isidentifier() for k in bindings):
            raise WorkerError(f"bindings must map binding names (identifiers such as 'SESSIONS') to classes or "
                              f"objects, got {bindings!r:.80}")
        merged.update(bindings)
    if compatibility_date is not None:
        compat = compatibility_date
    compat = _compat(compat or DEFAULT_COMPAT)
    if path is None:
        raise WorkerError("no worker module: pass its path (e.g. src/entry.py), or a wrangler file that names main")
    p = Path(path)
    lang = SUFFIXES.get(p.suffix)
    if lang is None:
        raise WorkerError(f"{str(p)!r} is not a worker module alarmkit can load: the name ends in one of "
                          f"{', '.join(SUFFIXES)}")
    if not p.is_file():
        raise WorkerError(f"no worker module {str(p)!r}; check the path (relative to {Path.cwd()})")
    try:
        host = importlib.import_module(f"alarmkit.workers.{lang}")
    except ImportError:
        raise WorkerError(f"{p.name}: the {lang} worker host (alarmkit.workers.{lang}) is not installed in this "
                          "alarmkit; load a Python worker (.py) instead") from None
    return host.load(sim, p, merged, compat)


def _compat(value: Any) -> str:
    import datetime as _dt

    if not isinstance(value, str):
        raise WorkerError(f"compatibility_date is a date such as '2026-11-17', got {value!r:.40}")
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        raise WorkerError(f"compatibility_date is a date such as '2026-11-17', got {value!r:.40}") from None
    return value


def example(name: str) -> Path:
    """A file of the example Python Worker of notebook 10 (``notebooks/workers/``: ``outbox.py``,
    ``outbox_fixed.py``, ``wrangler.jsonc``, ``drive.json``); source tree only, like the notebooks."""
    folder = Path(__file__).resolve().parents[2] / "notebooks" / "workers"
    path = folder / str(name)
    if path.parent != folder or not path.is_file():
        known = sorted(p.name for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
        raise WorkerError(f"no example worker file {name!r}; in {folder}: {known or 'nothing (not a source checkout)'}")
    return path
