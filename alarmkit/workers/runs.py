"""A worker and a drive script as a run of alarmkit: ``run_worker`` (a ``RunResult``, journaled, ready for
``plots``, ``report`` and ``check``) and ``explore_worker`` (crash points and fault plans, as ``explore``).

Both go through a scenario named ``"worker"`` (``scenario_fn``), registered only while they run: the
built-in scenario list stays what it is, and the explorer's worker processes register it by importing
``alarmkit.workers._scenario``. Its parameters are plain text and data, so a run is replayable from
its journal row: ``entry``, ``drive``, ``wrangler``, ``bindings`` (binding -> class name) and
``compatibility_date``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from ..errors import WorkerError
from ..kernel import EVENT_LIMIT, MEMORY_LIMIT_MB, WALL_LIMIT_S

__all__ = ["run_worker", "explore_worker", "scenario_fn", "registered", "register", "SCENARIO", "worker_params"]

SCENARIO = "worker"
DESCRIPTION = "your own worker module driven by a drive script (alarmkit worker, explore --worker)"
NO_EXPECT = ("the drive states no expectations, so nothing was checked at the end of any run and expect is not "
             "counted among the invariants (an \"expect\" list in the drive says what must hold)")


def scenario_fn(sim: Any, entry: str = "", drive: str = "", wrangler: str = "", bindings: Any = {},  # noqa: B006
                compatibility_date: str = "", event_limit: int = EVENT_LIMIT, wall_limit_s: float = WALL_LIMIT_S,
                memory_limit_mb: int = MEMORY_LIMIT_MB) -> dict:
    """Load ``entry`` into ``sim`` and run ``drive``: the ``"worker"`` scenario. ``event_limit``,
    ``wall_limit_s`` and ``memory_limit_mb`` are the simulation's budgets (0: no limit)."""
    from ._load import load_worker

    sim.event_limit = event_limit or None
    sim.wall_limit_s = wall_limit_s or None
    sim.memory_limit_mb = memory_limit_mb or None
    from .drive import load_drive, run_drive

    worker = load_worker(sim, entry or None, bindings=dict(bindings) or None, wrangler=wrangler or None,
                         compatibility_date=compatibility_date or None)
    script = load_drive(drive)
    result = run_drive(worker, script)
    return {"horizon_ms": sim.now, "requests": len(result.outcomes), "failed": len(result.failed),
            "expectations": len(script.expect),
            "pending": len(result.pending), "expect_failures": result.expect_failures,
            "outcomes": result.outcomes, "skipped_steps": result.skipped,
            "logs": list(getattr(worker, "logs", []))[:1000]}


# a replay script (explore's snippet) registers the scenario for good before it runs it by name
SETUP = "from alarmkit.workers import register\nregister()"


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """The ``"worker"`` scenario registered for the duration (and removed after, however it ends)."""
    from ..scenarios import SCENARIOS, scenario

    had = SCENARIOS.get(SCENARIO)
    scenario(SCENARIO, DESCRIPTION, setup=SETUP)(scenario_fn)
    try:
        yield
    finally:
        if had is None:
            SCENARIOS.pop(SCENARIO, None)
        else:
            SCENARIOS[SCENARIO] = had


def register() -> None:
    """Register the ``"worker"`` scenario in this process for good: for what runs a scenario by name later,
    such as the explorer widget (``Explorer("worker", entry=..., drive=..., wrangler=...)``). It then shows in
    ``list_scenarios()`` and ``alarmkit demo`` would try to run it: prefer ``registered()`` in scripts."""
    from ..scenarios import scenario

    scenario(SCENARIO, DESCRIPTION, setup=SETUP)(scenario_fn)


def worker_params(entry: str | Path | None, drive: str | Path, wrangler: str | Path | None = None,
                  bindings: dict | None = None, compatibility_date: str | None = None,
                  event_limit: int | None = EVENT_LIMIT, wall_limit_s: float | None = WALL_LIMIT_S,
                  memory_limit_mb: int | None = MEMORY_LIMIT_MB) -> dict:
    """The scenario's parameters: absolute paths (worker processes resolve them alike), class names as text."""
    if bindings is not None:
        if not isinstance(bindings, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in bindings.items()):
            raise WorkerError("run_worker and explore_worker take bindings as binding name -> class name (text); "
                              "to bind a Python object, use sim.load_worker(..., bindings=...) directly")
    from ..kernel import check_limit, check_megabytes, check_seconds

    params = {"entry": str(Path(entry).resolve()) if entry else "", "drive": str(Path(drive).resolve()),
              "wrangler": str(Path(wrangler).resolve()) if wrangler else "", "bindings": dict(bindings or {}),
              "compatibility_date": compatibility_date or ""}
    if event_limit != EVENT_LIMIT:  # a budget given: journaled with the run (0 for none)
        params["event_limit"] = check_limit("event_limit", event_limit) or 0
    if wall_limit_s != WALL_LIMIT_S:
        params["wall_limit_s"] = check_seconds("wall_limit_s", wall_limit_s) or 0.0
    if memory_limit_mb != MEMORY_LIMIT_MB:
        params["memory_limit_mb"] = check_megabytes("memory_limit_mb", memory_limit_mb) or 0
    return params


def run_worker(entry: str | Path | None, drive: str | Path, *, wrangler: str | Path | None = None,
               bindings: dict | None = None, compatibility_date: str | None = None, seed: int = 0,
               journal: Any = None, profile: str | None = None, faults: Any = None,
               event_limit: int | None = EVENT_LIMIT, wall_limit_s: float | None = WALL_LIMIT_S,
               memory_limit_mb: int | None = MEMORY_LIMIT_MB) -> Any:
    """Run ``drive`` against the worker at ``entry`` in a fresh simulation; a ``RunResult`` (its summary has
    ``requests``, ``failed``, ``pending``, ``expect_failures``, ``outcomes``, ``logs``). ``event_limit``,
    ``wall_limit_s`` and ``memory_limit_mb``: the simulation's budgets (``Simulation``; None for no limit)."""
    from ..scenarios import run_scenario

    params = worker_params(entry, drive, wrangler, bindings, compatibility_date, event_limit, wall_limit_s,
                           memory_limit_mb)
    with registered():
        return run_scenario(SCENARIO, seed=seed, journal=journal, profile=profile, faults=faults, **params)


def explore_worker(entry: str | Path | None, drive: str | Path, *, wrangler: str | Path | None = None,
                   bindings: dict | None = None, compatibility_date: str | None = None,
                   event_limit: int | None = EVENT_LIMIT, wall_limit_s: float | None = WALL_LIMIT_S,
                   memory_limit_mb: int | None = MEMORY_LIMIT_MB, **kwargs: Any) -> Any:
    """``alarmkit.explore`` on the worker and its drive (``kwargs``: ``seeds``, ``faults``, ``depth``,
    ``crash_points``, ``invariants``, ``workers``, ``journal``, ``out``...); an ``Exploration``. The drive's
    ``expect`` entries are checked in every run (the ``expect`` invariant); a drive without them leaves
    ``expect`` out of the invariants counted and says so in ``notes``."""
    from ..explore import explore

    params = worker_params(entry, drive, wrangler, bindings, compatibility_date, event_limit, wall_limit_s,
                           memory_limit_mb)
    modules = list(kwargs.pop("modules", ())) + ["alarmkit.workers._scenario"]
    with registered():
        found = explore(SCENARIO, params=params, modules=modules, **kwargs)
    from ..journal.invariants import INVARIANTS
    from .drive import load_drive

    if not load_drive(drive).expect:  # the expect invariant had nothing to check: not counted, and said
        chosen = found.invariants if found.invariants is not None else INVARIANTS
        found.invariants = tuple(i for i in chosen if i != "expect")
        found.unstated = ("expect",)  # said on the note, not as "not asked for"
        found.notes.append(NO_EXPECT)
    return found
