"""``load_worker``: the dispatch on a worker module's suffix to its language's host (see the package
docstring, ``alarmkit/workers/__init__.py``), and ``example``: the example worker of notebook 10."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError, WorkerError
from ._base import RefusedBinding, Var, Worker
from .wrangler import read_dev_vars, read_wrangler

__all__ = ["load_worker", "example", "SUFFIXES"]

SUFFIXES = {".py": "python", ".js": "js", ".mjs": "js", ".ts": "js", ".mts": "js", ".jsx": "js", ".tsx": "js"}


def load_worker(sim: Any, path: str | Path | None = None, bindings: dict | None = None,
                wrangler: str | Path | None = None, compatibility_date: str | None = None,
                compatibility_flags: list[str] | tuple[str, ...] | None = None) -> Worker:
    """Load the worker module at ``path`` into ``sim`` (see the module docstring); ``WorkerError`` when
    the file, a class or a binding is missing or wrong, or the module does not import."""
    merged: dict[str, Any] = {}
    compat = None
    flags: list[str] = []
    build: dict[str, dict[str, str]] = {}
    cfg = None
    if wrangler is not None:
        cfg = read_wrangler(wrangler)
        merged.update(cfg.durable_objects)
        dev_vars = read_dev_vars(Path(cfg.path).parent)
        for where, names in (("vars", cfg.vars), (".dev.vars", dev_vars)):
            clash = sorted(set(names) & set(cfg.durable_objects))
            if clash:  # env.V would be a string where the code expects a namespace: refused, never shadowed
                raise WorkerError(f"{where} beside {cfg.path} sets {clash[0]!r}, which is a Durable Object binding of "
                                  "the wrangler file: a var may not take a binding's name; rename one of them")
        merged.update({k: Var(v) for k, v in cfg.vars.items()})
        merged.update({k: Var(v) for k, v in dev_vars.items()})
        merged.update({name: RefusedBinding(name, what) for name, what in cfg.other.items()})
        compat = cfg.compatibility_date
        flags = list(cfg.compatibility_flags)
        here = Path(cfg.path).parent  # an alias that is a path is relative to the wrangler file, as wrangler's
        build = {"define": cfg.define, "alias": {k: str((here / v).resolve()) if v.startswith(".") else v
                                                 for k, v in cfg.alias.items()}}
        if path is None and cfg.main:
            path = Path(cfg.path).parent / cfg.main
    if bindings is not None:
        if not isinstance(bindings, dict) or not all(isinstance(k, str) and k.isidentifier() for k in bindings):
            raise WorkerError(f"bindings must map binding names (identifiers such as 'SESSIONS') to classes or "
                              f"objects, got {bindings!r:.80}")
        merged.update(bindings)
    odd = sorted(k for k in merged if not isinstance(k, str) or not k.isidentifier() or k.startswith("__"))
    if odd:  # env.__class__ and friends are Python's own attributes, never a binding
        raise WorkerError(f"binding names are identifiers that do not start with '__' (e.g. 'SESSIONS'), got "
                          f"{', '.join(repr(k)[:40] for k in odd[:5])}")
    if compatibility_date is not None:
        compat = compatibility_date
    if compatibility_flags is not None:
        if isinstance(compatibility_flags, str) or not all(isinstance(f, str) for f in compatibility_flags):
            raise WorkerError(f"compatibility_flags is a list of flag names such as ['nodejs_compat'], got "
                              f"{compatibility_flags!r:.60}")
        flags = list(compatibility_flags)
    compat = _compat(compat or sim.profile.compatibility_date)
    if compat != sim.profile.compatibility_date:  # the runtime's date-gated rules (ctx.id.name) follow the worker's
        try:
            sim.configure(compatibility_date=compat)
        except AlarmkitError:
            raise WorkerError(
                f"the worker's compatibility date {compat} differs from the simulation's "
                f"{sim.profile.compatibility_date}, and the simulation has already run; load the worker first, "
                f"or make it with Simulation(compatibility_date={compat!r})") from None
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
    except ModuleNotFoundError as err:
        if err.name != f"alarmkit.workers.{lang}":
            raise  # the host is there and something it imports is not: its own error says what
        raise WorkerError(f"{p.name}: the {lang} worker host (alarmkit.workers.{lang}) is not installed in this "
                          "alarmkit; load a Python worker (.py) instead") from None
    if lang == "js":
        return host.load(sim, p, merged, compat, flags, build)
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
