"""Point the explorer at a scenario: "no lost work under these faults", or a short counterexample.

``explore(scenario)`` runs the scenario once without faults, then

* every crash point: each await reached by each task (alarm() invocations, RPCs, constructors)
  of the fault-free run, each as its own deterministic simulation; then, recursively, every
  await reached after that crash, to ``depth`` crashes per run;
* ``seeds`` random runs, each with a ``FaultPlan`` drawn from a ``FaultSpace`` (or one fixed
  plan under many seeds);

checks every run with ``alarmkit.invariants``, shrinks each kind of failure to a minimal plan
and seed, and returns an ``Exploration``: the result table (a DataFrame, one row per run), the
counterexamples (each prints as a Python snippet that reproduces it), and the duplicates.
Runs go to any ``concurrent.futures.Executor`` (a local process pool by default, or Dask).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pandas as pd

from .errors import AlarmkitError
from .faults import FaultPlan
from .invariants import INVARIANTS
from ._shrink import shrink, snippet
from ._space import FaultSpace
from ._sweep import SweepRun, normalize_table, resolve_executor, run_one, run_specs, write_rows

if TYPE_CHECKING:  # pragma: no cover
    from ._replay import Comparison
    from .scenarios import RunResult

__all__ = ["explore", "Exploration", "Counterexample", "FaultSpace", "results_table", "shrink", "snippet"]


@dataclass
class Counterexample:
    """A minimal fault plan and seed under which ``scenario`` violates ``invariant``."""

    scenario: str
    invariant: str
    object: str | None
    message: str
    plan: FaultPlan
    seed: int
    params: dict = field(default_factory=dict)
    profile: str | None = None
    found_in: str = ""  # the run key it was shrunk from
    shrink_runs: int = 0

    def snippet(self) -> str:
        return snippet(self.scenario, self.plan, self.seed, self.params, self.profile)

    def replay(self, journal: Any = None, scenario: str | None = None) -> RunResult:
        """Run this counterexample again into ``journal`` (a ``RunResult``); ``scenario``: run another
        scenario (e.g. the correct variant) under the same seed and plan."""
        from ._replay import replay

        return replay(self, journal, scenario)

    def compare(self, correct: str, journal: Any = None, labels: tuple[str, str] | None = None) -> Comparison:
        """Replay this and the ``correct`` scenario under the same plan: ``.bad``, ``.good``,
        ``.check()`` (of the bad run) and ``.figure(kinds=..., window=..., title=...)``."""
        from ._replay import compare_with

        return compare_with(self, correct, journal, labels)

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "invariant": self.invariant, "object": self.object,
                "message": self.message, "faults": self.plan.to_dict(), "seed": self.seed,
                "found_in": self.found_in, "snippet": self.snippet()}

    def __str__(self) -> str:
        return f"{self.invariant} on {self.object}: {self.message}\n{self.snippet()}"


@dataclass
class Exploration:
    """What ``explore`` found: ``table`` (one row per run), ``counterexamples``, ``duplicates``."""

    scenario: str
    table: pd.DataFrame
    counterexamples: list[Counterexample]
    duplicates: pd.DataFrame
    wall_s: float
    out: Path | None = None

    @property
    def ok(self) -> bool:
        """No violation and no run that raised."""
        t = self.table
        return not self.counterexamples and int(t["violations"].sum()) == 0 and not (t["error"] != "").any()

    @property
    def runs(self) -> int:
        return len(self.table)

    def report(self) -> str:
        t = self.table
        bad = int((t["violations"] > 0).sum())
        lines = [f"{self.scenario}: {len(t)} runs ({', '.join(f'{n} {k}' for k, n in t['kind'].value_counts().sort_index().items())})"
                 f" in {self.wall_s:.1f} s; {bad} with violations; {int(t['stuck'].gt(0).sum())} with stuck work"]
        if not self.counterexamples:
            lines.append("no lost work, no early or overlapping alarm, no wake-up dropped or pushed late, under these faults")
        for cx in self.counterexamples:
            lines += ["", f"{cx.invariant} on {cx.object} (shrunk from {cx.found_in} in {cx.shrink_runs} runs):",
                      f"  {cx.message}", "", cx.snippet()]
        errors = t[t["error"] != ""]
        if len(errors):
            lines += ["", f"{len(errors)} run(s) raised out of the scenario, e.g. {errors['key'].iloc[0]}: "
                          f"{errors['error'].iloc[0]}"]
        if len(self.duplicates):
            d = self.duplicates
            lines += ["", f"duplicates (at-least-once, not failures): {len(d)} key(s) ran more than once in "
                          f"{int(t['duplicates'].gt(0).sum())} runs, at most {int(d['max_count'].max())} times"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        t = self.table
        return {
            "scenario": self.scenario,
            "runs": int(len(t)),
            "runs_with_violations": int((t["violations"] > 0).sum()),
            "runs_with_stuck_work": int(t["stuck"].gt(0).sum()),
            "violations": [cx.to_dict() for cx in self.counterexamples],
            "errors": [{"key": k, "error": e} for k, e in zip(t["key"], t["error"]) if e][:20],
            "duplicates": self.duplicates.to_dict(orient="records"),
            "wall_s": round(self.wall_s, 3),
        }

    def __repr__(self) -> str:
        return f"<Exploration {self.scenario}: {self.runs} runs, {len(self.counterexamples)} counterexample(s)>"


def explore(
    scenario: str,
    faults: FaultPlan | FaultSpace | dict | None = None,
    seeds: int | Iterable[int] = 100,
    crash_points: str | Iterable[str] | None = "all",
    depth: int = 2,
    *,
    params: dict | None = None,
    profile: str | None = None,
    journal: Any = None,
    executor: Any = None,
    workers: int | None = None,
    out: str | Path | None = None,
    invariants: Iterable[str] | None = None,
    shrink_budget: int = 300,
    max_counterexamples: int = 8,
    modules: Iterable[str] = (),
    progress: bool = True,
    quiet: bool = False,
) -> Exploration:
    """Explore ``scenario`` under faults; see the module docstring.

    ``faults``: a ``FaultSpace`` (random plans; the default space when None) or a ``FaultPlan``
    (the same plan under every seed, and the base of every crash-point run). ``seeds``: how many
    random runs (seeds 0..N-1) or which seeds. ``crash_points``: "all" tasks, "alarm" only, a
    list of task names, or None for no crash search. ``executor``: None (a process pool of
    ``workers``; in this process when ``workers == 1``), "serial", any Executor, or a Dask
    ``Client``. ``journal``: a Journal or a path: every run is written to it. ``out``: a folder
    for Parquet result files (read back with DuckDB). ``modules``: modules the workers import
    to register your own scenarios. Unless ``quiet``, each counterexample is printed as a snippet.
    """
    from .scenarios import get_scenario

    started = time.perf_counter()
    sc = get_scenario(scenario)
    params = dict(params or {})
    sc.check_params(params)
    if invariants is not None:
        invariants = list(invariants)
        bad = sorted(set(invariants) - set(INVARIANTS))
        if bad:
            raise AlarmkitError(f"unknown invariant {bad[0]!r}; known: {sorted(INVARIANTS)}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise AlarmkitError(f"depth is how many crashes a crash-point run may stack (0 or more), got {depth!r}")
    space, base = _faults(faults)
    seed_list = _seeds(seeds)
    tasks = _crash_tasks(crash_points)
    ctx = {"scenario": scenario, "params": params, "profile": profile, "invariants": invariants,
           "modules": list(modules), "want_events": journal is not None, "out": str(out) if out else None}
    out_dir = _prepare_out(out)

    # the fault-free run (under the base plan): what exists to break
    first = run_one(ctx, {"idx": 0, "key": "baseline", "kind": "baseline", "depth": 0, "seed": 0,
                          "plan": base.to_dict(), "want_points": True})
    domain = first.domain
    if out_dir is not None:
        write_rows(out_dir / "runs-00-baseline.parquet", [first.row])
    results: list[SweepRun] = [first]
    specs: list[dict] = []
    idx = 1
    seen: set[frozenset] = set()
    if tasks is not None and depth > 0:
        for point in _points(domain.points, tasks):
            seen.add(frozenset([point]))
            specs.append(_crash_spec(idx, base, (point,), want_points=depth > 1))
            idx += 1
    for seed in seed_list:
        plan = base if space is None else space.draw(seed, domain)
        specs.append({"idx": idx, "key": f"seed:{seed}", "kind": "random", "depth": 0, "seed": seed,
                      "plan": plan.to_dict(), "want_points": False})
        idx += 1
    pool, owned, width = resolve_executor(executor, workers)
    try:
        results += _waves(ctx, specs, pool, width, progress, base, tasks, depth, seen, idx)
    finally:
        if owned:
            pool.shutdown()
    results.sort(key=lambda r: r.row["idx"])
    run_ids = _write_journal(journal, scenario, profile or sc.profile, params, results)
    table = _table(results, run_ids, out_dir)
    counterexamples = _counterexamples(ctx, results, shrink_budget, max_counterexamples)
    found = Exploration(scenario, table, counterexamples, _duplicates(results), time.perf_counter() - started, out_dir)
    if not quiet:
        for cx in counterexamples:
            print(f"# {cx.invariant} on {cx.object}: {cx.message}\n{cx.snippet()}\n")
    return found


def _waves(ctx: dict, specs: list[dict], pool: Any, width: int, progress: bool, base: FaultPlan,
           tasks: tuple | None, depth: int, seen: set, idx: int) -> list[SweepRun]:
    """Wave 1: single crashes and random runs; wave n: a crash after each crash of wave n - 1."""
    results: list[SweepRun] = []
    wave = 1
    while specs:
        done = run_specs(ctx, specs, pool, width, progress, wave)
        results += done
        specs = []
        if wave < depth and tasks is not None:
            for r in sorted(done, key=lambda r: r.row["idx"]):  # completion order varies; idx must not
                if r.row["kind"] != "crash" or r.row["depth"] != wave:
                    continue
                parent = tuple(_crash_tuple(c) for c in FaultPlan.from_dict(r.plan).crashes[len(base.crashes):])
                for point in _points(r.points_after, tasks):
                    key = frozenset(parent + (point,))
                    if len(key) == len(parent) + 1 and key not in seen:
                        seen.add(key)
                        specs.append(_crash_spec(idx, base, parent + (point,), want_points=wave + 1 < depth))
                        idx += 1
        wave += 1
    return results


# -- crash points ---------------------------------------------------------------------------------


def _crash_tasks(crash_points: Any) -> tuple[str, ...] | None:
    if crash_points is None or crash_points is False or crash_points == "none":
        return None
    if crash_points == "all":
        return ()
    if crash_points == "alarm":
        return ("alarm",)
    if isinstance(crash_points, str):
        raise AlarmkitError(f"crash_points is 'all', 'alarm', None or a list of task names, got {crash_points!r}")
    return tuple(crash_points)


def _points(points: Iterable[tuple], tasks: tuple[str, ...]) -> list[tuple]:
    out, seen = [], set()
    for obj, task, inv, k, *_ in points:
        p = (obj, task, inv, k)
        if p not in seen and (not tasks or task in tasks):
            seen.add(p)
            out.append(p)
    return out


def _crash_tuple(c) -> tuple:
    return (c.object, c.task, c.invocation, c.at_await)


def _crash_spec(idx: int, base: FaultPlan, points: tuple, want_points: bool) -> dict:
    crashes = list(base.crashes) + [{"object": o, "task": t, "invocation": i, "at_await": k} for o, t, i, k in points]
    key = "crash:" + "+".join(f"{o}/{t}#{i}@{k}" for o, t, i, k in points)
    return {"idx": idx, "key": key, "kind": "crash", "depth": len(points), "seed": 0,
            "plan": base.replace(crashes=crashes).to_dict(), "want_points": want_points}


# -- arguments ------------------------------------------------------------------------------------


def _faults(faults: Any) -> tuple[FaultSpace | None, FaultPlan]:
    if faults is None:
        return FaultSpace(), FaultPlan()
    if isinstance(faults, FaultSpace):
        return faults, FaultPlan()
    if isinstance(faults, (FaultPlan, dict)):
        return None, FaultPlan.from_dict(faults)
    raise AlarmkitError(f"faults is a FaultPlan, a FaultSpace, a dict or None, got {type(faults).__name__}")


def _seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, bool):
        raise AlarmkitError(f"seeds is a count or a list of ints, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 0:
            raise AlarmkitError(f"seeds must be >= 0 (a count of random runs), got {seeds}")
        return list(range(seeds))
    out = list(seeds)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in out):
        raise AlarmkitError(f"seeds must all be ints, got {out!r}")
    return out


def _prepare_out(out: Any) -> Path | None:
    if out is None:
        return None
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("runs-*.parquet"):  # only our own files from an earlier exploration
        stale.unlink()
    return path


# -- results --------------------------------------------------------------------------------------


def _write_journal(journal: Any, scenario: str, profile: str, params: dict, results: list[SweepRun]) -> list:
    if journal is None:
        return [None] * len(results)
    from .journal import Journal

    own = not isinstance(journal, Journal)
    j = Journal(journal) if own else journal
    try:
        ids = []
        for r in results:
            run_id = j.start_run(scenario, profile, r.row["seed"], params, r.plan)
            j.write_events(run_id, r.events or [])
            ids.append(run_id)
        return ids
    finally:
        if own:
            j.close()


def _table(results: list[SweepRun], run_ids: list, out_dir: Path | None) -> pd.DataFrame:
    if out_dir is not None:
        df = results_table(out_dir)  # what the workers wrote, read back by DuckDB as one table
    else:
        df = normalize_table(pd.DataFrame([r.row for r in results]).sort_values("idx", kind="stable"))
    df["run_id"] = pd.array(run_ids, dtype="Int64")
    return df


def _duplicates(results: list[SweepRun]) -> pd.DataFrame:
    agg: dict[tuple, list[int]] = {}
    for r in results:
        for d in r.duplicates:
            k = (d["object"], d["effect"], str(d["key"]))
            a = agg.setdefault(k, [0, 0])
            a[0] += 1
            a[1] = max(a[1], d["count"])
    rows = [{"object": o, "effect": e, "key": k, "runs": n, "max_count": m} for (o, e, k), (n, m) in sorted(agg.items())]
    return pd.DataFrame(rows, columns=["object", "effect", "key", "runs", "max_count"])


# -- shrinking ------------------------------------------------------------------------------------


def _counterexamples(ctx: dict, results: list[SweepRun], budget: int, limit: int) -> list[Counterexample]:
    groups: dict[tuple, SweepRun] = {}
    for r in results:
        for v in r.violations:
            g = (v["invariant"], v["object"])
            best = groups.get(g)
            if best is None or _cost(r) < _cost(best):
                groups[g] = r
    out = []
    for (inv, obj), r in sorted(groups.items(), key=lambda kv: (list(INVARIANTS).index(kv[0][0]), str(kv[0][1])))[:limit]:
        try:
            plan, seed, v, runs = shrink(ctx["scenario"], FaultPlan.from_dict(r.plan), r.row["seed"], inv, obj,
                                         budget=budget, ctx=ctx)
            message = v["message"]
        except AlarmkitError as err:  # not reproducible: report it as found, unshrunk
            plan, seed, runs = FaultPlan.from_dict(r.plan), r.row["seed"], 1
            first = next(v for v in r.violations if (v["invariant"], v["object"]) == (inv, obj))
            message = f"{first['message']} ({err})"
        out.append(Counterexample(ctx["scenario"], inv, obj, message, plan, seed, ctx["params"],
                                  ctx["profile"], r.row["key"], runs))
    return out


def _cost(r: SweepRun) -> tuple:
    return (FaultPlan.from_dict(r.plan).size(), r.row["seed"], r.row["idx"])


def results_table(out: str | Path) -> pd.DataFrame:
    """Read the Parquet files an exploration wrote to ``out`` back as one table (DuckDB)."""
    import duckdb

    pattern = str(Path(out) / "runs-*.parquet")
    con = duckdb.connect()
    try:
        return normalize_table(con.execute(f"SELECT * FROM read_parquet({pattern!r}) ORDER BY idx").df())
    finally:
        con.close()

