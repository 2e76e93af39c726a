"""Running many exploration runs: one run, a chunk of runs (the picklable worker), executors.

A worker receives plain data (the scenario's name, parameters, plans as dicts) and returns
``SweepRun`` values; with an output folder it also writes its chunk's rows as a Parquet file.
Scenarios are found by name in the worker, so they must be registered when alarmkit (or one
of the ``modules`` it is told to import) is imported there.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from concurrent.futures import Executor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..errors import AlarmkitError, JsHostLost
from ..journal import EventRow
from ._space import Domain
from ..runtime.faults import FaultPlan

__all__ = ["SweepRun", "Domain", "run_one", "run_chunk", "run_specs", "resolve_executor", "normalize_table",
           "TABLE_COLUMNS", "write_rows"]

# column -> pandas dtype of the result table (one row per run)
TABLE_COLUMNS = {
    "idx": "int64", "key": "object", "kind": "object", "depth": "int64", "seed": "int64", "faults": "object",
    "n_faults": "int64", "faults_injected": "int64", "violations": "int64", "invariants": "object",
    "first_violation": "object", "obligations": "int64", "done": "int64", "lost": "int64", "stuck": "int64",
    "duplicates": "int64", "extra_effects": "int64", "max_late_ms": "Int64", "events": "int64",
    "end_ms": "int64", "error": "object",
    # faults injected per plan entry ({"crashes[0]": 1, ...}), how many entries injected nothing, and why
    "faults_applied": "object", "unapplied": "int64", "unapplied_why": "object",
}


@dataclass
class SweepRun:
    row: dict[str, Any]
    plan: dict[str, Any]
    violations: list[dict] = field(default_factory=list)
    duplicates: list[dict] = field(default_factory=list)
    points_after: list[tuple] = field(default_factory=list)
    events: list[EventRow] | None = None
    domain: Domain | None = None


def run_one(ctx: dict, spec: dict) -> SweepRun:
    """Run one simulation of ``ctx["scenario"]`` under ``spec["plan"]`` and check it."""
    from ..runtime import unapplied
    from ..runtime import Simulation
    from ..journal.invariants import DEFAULT_GRACE_MS, check_run, final_alarms
    from ..scenarios import get_scenario

    sc = get_scenario(ctx["scenario"])
    plan = FaultPlan.from_dict(spec["plan"])
    params = ctx["params"]
    sim = Simulation(profile=ctx["profile"] or sc.profile, seed=spec["seed"], scenario=sc.name,
                     params={**sc.params, **params}, faults=plan)
    row = {"idx": spec["idx"], "key": spec["key"], "kind": spec["kind"], "depth": spec["depth"],
           "seed": spec["seed"], "faults": plan.to_json(), "n_faults": plan.size(), "error": ""}
    result = SweepRun(row, plan.to_dict())
    try:
        summary = sc.fn(sim, **params) or {}
    except JsHostLost as err:  # the host broke, not the run: every later run would wait out the same timeout
        raise JsHostLost(f"explore stopped at run {spec['key']} (seed {spec['seed']}, plan {plan.to_json()}): {err}") from None
    except Exception as err:  # noqa: BLE001 - a scenario that breaks under faults is a finding, not a crash
        summary = {}
        row["error"] = f"{type(err).__name__}: {err}"[:300]
    rows = sim.rows
    report = check_run(rows, summary.get("obligations", ()), summary.get("horizon_ms", sim.now),
                       final=final_alarms(sim), invariants=ctx["invariants"],
                       grace_ms=summary.get("grace_ms", DEFAULT_GRACE_MS))
    row.update(report.summary())
    row["first_violation"] = report.violations[0].message if report.violations else ""
    row["events"] = len(rows)
    row["end_ms"] = sim.now
    why = unapplied(plan)
    row.update(faults_applied=json.dumps(plan.applied()), unapplied=len(why), unapplied_why=json.dumps(why))
    result.violations = [v.to_dict() for v in report.violations]
    result.duplicates = report.duplicates
    if ctx.get("want_events"):
        result.events = list(rows)
    points = plan.points
    if spec.get("want_points"):
        crash = {(c.object, c.task, c.invocation, c.at_await) for c in plan.crashes}
        last = -1
        for i, (o, t, inv, k, _t) in enumerate(points):
            if (o, t, inv, k) in crash or (None, t, inv, k) in crash:
                last = i
        result.points_after = [p[:4] for p in points[last + 1:]]
    if spec["kind"] == "baseline":
        result.domain = _domain(rows, points, summary, sim.now)
    return result


def _domain(rows: list[EventRow], points: list[tuple], summary: dict, end: int) -> Domain:
    attempts: dict = {}
    successes: dict = {}
    calls: dict = {}
    last_fire = 0
    for r in rows:
        kind, obj = r.kind, r.object_id
        if kind == "fire":
            attempts[obj] = attempts.get(obj, 0) + 1
            last_fire = r.t_ms
        elif kind == "handler_ok":
            successes[obj] = successes.get(obj, 0) + 1
        elif kind == "effect":
            k = (obj, r.detail.get("name"))
            calls[k] = calls.get(k, 0) + 1
    dues = [o["due_ms"] if isinstance(o, dict) else o.due_ms for o in summary.get("obligations", ())]
    return Domain(
        points=[p[:4] for p in points],
        effects=sorted({name for _obj, name in calls}),
        effect_calls=max(calls.values(), default=0),
        attempts=max(attempts.values(), default=0),
        successes=max(successes.values(), default=0),
        window_ms=max(dues, default=last_fire or end),
    )


def run_chunk(job: dict) -> list[SweepRun]:
    """The worker: run a chunk of specs. (Their rows are written to Parquet by the caller's sink, in
    chunk order, after the journal: the folder and the journal then hold the same runs.)"""
    import alarmkit.scenarios  # noqa: F401  (registers the built-in scenarios in a fresh worker)

    ctx = job["ctx"]
    for module in ctx.get("modules", ()):
        importlib.import_module(module)
    return [run_one(ctx, spec) for spec in job["specs"]]


def write_rows(path: Path, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"int64": pa.int64(), "Int64": pa.int64(), "object": pa.string()}
    schema = pa.schema([(c, types[t]) for c, t in TABLE_COLUMNS.items()])
    table = pa.Table.from_pylist([{c: r.get(c) for c in TABLE_COLUMNS} for r in rows], schema=schema)
    from .._files import atomic_output

    # each chunk's file has a name of its own in the exploration's own new folder: never replaced
    with atomic_output(path, ours=None, what="Parquet file", as_path=True) as tmp:
        pq.write_table(table, tmp)


def normalize_table(df: pd.DataFrame) -> pd.DataFrame:
    """The result table's columns, in order, with fixed dtypes (whichever way it was built)."""
    df = df.reindex(columns=list(TABLE_COLUMNS))
    for col, dtype in TABLE_COLUMNS.items():
        if dtype == "object":
            df[col] = df[col].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
        else:
            df[col] = df[col].astype("Float64").astype(dtype) if dtype == "Int64" else df[col].astype(dtype)
    return df.reset_index(drop=True)


# -- executors ------------------------------------------------------------------------------------


class InProcess:
    """Runs each chunk here, now (``workers=1`` or ``executor="serial"``)."""

    def __repr__(self) -> str:
        return "<in-process>"


def resolve_executor(executor: Any, workers: int | None) -> tuple[Any, int]:
    """``(executor, width)``. None is the session's local pool (``alarmkit._pool``), kept for the
    next call; any other executor is the caller's to shut down."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise AlarmkitError(f"workers must be an int >= 1, got {workers!r}")
    if executor is None:
        cores = os.cpu_count() or 1
        n = workers or cores
        if n > 8 * cores:  # each worker is a Python process (~100 MB); past the cores they only wait their turn
            raise AlarmkitError(f"workers must be in 1..{8 * cores} for a local pool on this machine ({cores} cores, "
                                f"8 workers a core at most), got {n:,}; pass fewer, or an executor of your own")
        if n == 1:
            return InProcess(), 1
        from ._pool import local_pool

        return local_pool(n, preload=("alarmkit.scenarios", __name__)), n
    if executor == "serial":
        return InProcess(), 1
    if hasattr(executor, "get_executor") and hasattr(executor, "ncores"):  # a dask.distributed Client
        width = max(1, sum(executor.ncores().values()))
        return executor.get_executor(pure=False), width
    if isinstance(executor, Executor):
        return executor, workers or getattr(executor, "_max_workers", None) or os.cpu_count() or 1
    raise AlarmkitError(
        f"executor must be None (a local process pool), 'serial', a concurrent.futures.Executor or a "
        f"dask.distributed Client, got {executor!r}"
    )


def run_specs(ctx: dict, specs: list[dict], executor: Any, width: int, progress: bool, wave: int,
              on_done: Callable[[list[SweepRun], str], None] = lambda results, name: None) -> list[SweepRun]:
    """Run ``specs`` on ``executor`` in chunks; results in no particular order. ``on_done`` gets
    each chunk's results and name in chunk order (the order of ``specs``), whatever order the
    workers finish in: so journal run ids follow the specs, the same for any worker count. On Ctrl-C
    (or any error) the chunks not started are cancelled, and a local pool's workers are stopped,
    before the exception goes on."""
    from tqdm.auto import tqdm

    if not specs:
        return []
    size = max(1, min(64, math.ceil(len(specs) / (width * 4))))
    jobs = [{"ctx": ctx, "specs": specs[i:i + size], "name": f"runs-{wave:02d}-{i // size:05d}"}
            for i in range(0, len(specs), size)]
    out: list[SweepRun] = []
    with tqdm(total=len(specs), desc=f"{ctx['scenario']} wave {wave}", unit="run", disable=not progress,
              leave=False) as bar:
        if isinstance(executor, InProcess):
            for job in jobs:
                done = run_chunk(job)
                on_done(done, job["name"])
                out += done
                bar.update(len(job["specs"]))
            return out
        futures = {executor.submit(run_chunk, job): i for i, job in enumerate(jobs)}
        finished: dict[int, list[SweepRun]] = {}  # chunks done ahead of an earlier one still running
        released = 0
        try:
            for fut in as_completed(futures):
                finished[futures[fut]] = fut.result()
                bar.update(len(jobs[futures[fut]]["specs"]))
                while released in finished:  # hand chunks on in order: run ids follow the specs
                    done = finished.pop(released)
                    on_done(done, jobs[released]["name"])
                    out += done
                    released += 1
        except BrokenProcessPool as err:
            _stop(executor, futures)
            raise AlarmkitError(
                f"a worker process of the pool died ({err}); in a script, call explore() under "
                "`if __name__ == \"__main__\":` (each worker imports the script), or pass workers=1 "
                "to run in this process"
            ) from None
        except BaseException:
            _stop(executor, futures)
            raise
    return out


def _stop(executor: Any, futures: dict) -> None:
    for fut in futures:
        fut.cancel()  # only the chunks not started yet; running ones finish (or die with the pool)
    from . import _pool

    if executor is _pool._shared.get("pool"):
        _pool.discard(executor)
