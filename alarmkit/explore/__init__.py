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
Runs go to any ``concurrent.futures.Executor`` (by default a local pool of spawned processes,
kept for the session: ``alarmkit._pool``; or Dask). The journal and the output folder are opened
before the first run and every chunk of runs is written as it finishes, so Ctrl-C keeps them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pandas as pd

from ..kernel import SEED_MAX
from ..errors import AlarmkitError, PlanNotApplied
from .._text import short_repr
from ..runtime.faults import FaultPlan
from ..journal.invariants import INVARIANTS
from ..scenarios import SCENARIOS
from ._findings import Counterexample, Exploration, plan_warnings
from ._shrink import shrink, snippet
from ._sink import Sink
from ._space import FaultSpace
from ._sweep import InProcess, SweepRun, normalize_table, resolve_executor, run_one, run_specs

__all__ = ["explore", "Exploration", "Counterexample", "FaultSpace", "results_table", "shrink", "snippet",
           "MAX_CRASH_RUNS"]

MAX_CRASH_RUNS = 100_000  # explore's default cap on crash-point runs: lease-ledger's depth 4 is ~48,000
MAX_SEEDS = 10_000_000  # random runs one explore() may be asked for: ~5 hours of the lease ledger at ~600 runs/s


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
    strict: bool = False,
    max_crash_runs: int = MAX_CRASH_RUNS,
    quiet: bool = True,
    max_work: int | None = None,
) -> Exploration:
    """Explore ``scenario`` under faults; see the module docstring.

    ``faults``: a ``FaultSpace`` (random plans; the default space when None) or a ``FaultPlan``
    (the same plan under every seed, and the base of every crash-point run). ``seeds``: how many
    random runs (seeds 0..N-1) or which seeds. ``crash_points``: "all" tasks, "alarm" only, a
    list of task names, or None for no crash search. ``executor``: None (the session's local pool
    of ``workers`` spawned processes; in this process when ``workers == 1``), "serial", any
    Executor, or a Dask ``Client``. ``journal``: a Journal or a path: every run is written to it
    as its chunk finishes. ``out``: a folder; this call writes its Parquet result files into a new
    subfolder of it (``Exploration.out``; read back with ``results_table``). ``modules``: modules
    the workers import to register your own scenarios. ``max_crash_runs``: the cap on crash-point
    runs; a deeper search than it allows stops before it starts, with an estimate. A plan entry that injected
    nothing in any run is a warning (``Exploration.warnings``, in ``report()``); with ``strict``
    it raises ``PlanNotApplied`` (its ``exploration`` holds the result). ``max_work``: the cap on each run's
    estimated work (``scenarios.work``), checked before any run. Nothing is printed:
    ``print(result.report())`` shows every counterexample as a snippet (``quiet`` is ignored).

    Ctrl-C cancels the queued runs and raises ``KeyboardInterrupt`` saying what was kept.
    """
    from ..scenarios import get_scenario

    started = time.perf_counter()
    sc = get_scenario(scenario)
    params = dict(params or {})
    sc.check_params(params, max_work)
    invariants, claimed = _invariants(scenario, invariants)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise AlarmkitError(f"depth is how many crashes a crash-point run may stack (0 or more), got {depth!r}")
    if isinstance(max_crash_runs, bool) or not isinstance(max_crash_runs, int) or max_crash_runs < 1:
        raise AlarmkitError(f"max_crash_runs is the cap on crash-point runs (1 or more), got {max_crash_runs!r}")
    space, base = _faults(faults)
    seed_list = _seeds(seeds)
    tasks = _crash_tasks(crash_points)
    pool, width = resolve_executor(executor, workers)  # a local pool starts its workers now
    if not isinstance(pool, InProcess):
        _check_importable(sc, modules)
    sink = Sink(journal, out, scenario, profile or sc.profile, params)  # both checked before any run
    ctx = {"scenario": scenario, "params": params, "profile": profile, "invariants": invariants,
           "modules": list(modules), "want_events": sink.journal is not None,
           "out": str(sink.out) if sink.out else None}
    try:
        # the fault-free run (under the base plan): what exists to break
        first = run_one(ctx, {"idx": 0, "key": "baseline", "kind": "baseline", "depth": 0, "seed": 0,
                              "plan": base.to_dict(), "want_points": True})
        sink.add([first], "runs-00-baseline")
        domain = first.domain
        specs: list[dict] = []
        seen: set[frozenset] = set()
        if tasks is not None and depth > 0:
            for point in _points(domain.points, tasks):
                seen.add(frozenset([point]))
                specs.append(_crash_spec(len(specs) + 1, base, (point,), want_points=depth > 1))
        _check_cap(len(specs), depth, max_crash_runs)
        for seed in seed_list:
            plan = base if space is None else space.draw(seed, domain)
            specs.append({"idx": len(specs) + 1, "key": f"seed:{seed}", "kind": "random", "depth": 0, "seed": seed,
                          "plan": plan.to_dict(), "want_points": False})
        results = [first] + _waves(ctx, specs, pool, width, progress, base, tasks, depth, seen, max_crash_runs,
                                   sink.add)
    except KeyboardInterrupt:
        sink.close("interrupted")
        raise KeyboardInterrupt(f"explore {scenario} interrupted: {sink.kept()}") from None
    except BaseException:
        sink.close("failed")
        raise
    sink.close("complete")
    results.sort(key=lambda r: r.row["idx"])
    table = _table(results, sink.run_ids, sink.out)
    counterexamples = _counterexamples(ctx, results, shrink_budget, max_counterexamples)
    found = Exploration(scenario, table, counterexamples, _duplicates(results), time.perf_counter() - started,
                        sink.out, plan_warnings(base, table), claimed,
                        unstated=() if scenario == _DRIVEN else ("expect",))
    if strict and found.warnings:
        raise PlanNotApplied(f"{found.warnings[0]} (strict: a plan entry that never applied is an error; "
                             "fix the plan, or drop --strict to see it as a warning)", found)
    return found


_DRIVEN = "worker"  # alarmkit.workers.runs.SCENARIO: the one scenario whose drive states expectations


def _invariants(scenario: str, invariants: Iterable[str] | None) -> tuple[list[str] | None, tuple[str, ...] | None]:
    """``(the invariants each run checks, the ones its all-clear may claim)``. Each name once; an unknown
    name, none at all, or ``expect`` for a scenario that states no expectations (only a worker's drive
    does) is refused. A scenario's all-clear never claims ``expect``, which had nothing to check."""
    if invariants is None:
        return None, None if scenario == _DRIVEN else tuple(k for k in INVARIANTS if k != "expect")
    if isinstance(invariants, str):
        raise AlarmkitError(f"invariants is a list of names, got the text {short_repr(invariants, 60)}; "
                            f"pass [{short_repr(invariants, 60)}]")
    names = list(dict.fromkeys(invariants))  # a name asked for twice is checked, and counted, once
    bad = sorted((n for n in names if n not in INVARIANTS), key=repr)
    if bad:
        raise AlarmkitError(f"unknown invariant {short_repr(bad[0], 60)}; known: {sorted(INVARIANTS)}")
    if not names:
        raise AlarmkitError("invariants=[] checks nothing; name at least one (known: "
                            f"{sorted(INVARIANTS)}), or pass None for all")
    if "expect" in names and scenario != _DRIVEN:
        raise AlarmkitError(f"invariant 'expect' checks a worker drive's expect list, and scenario "
                            f"{short_repr(scenario, 60)} states no expectations, so it would check nothing; drop it, "
                            "or explore your worker: alarmkit explore --worker ENTRY --drive FILE")
    return names, tuple(names)


def _waves(ctx: dict, specs: list[dict], pool: Any, width: int, progress: bool, base: FaultPlan,
           tasks: tuple | None, depth: int, seen: set, cap: int, on_done: Any) -> list[SweepRun]:
    """Wave 1: single crashes and random runs; wave n: a crash after each crash of wave n - 1."""
    results: list[SweepRun] = []
    idx = len(specs) + 1
    wave = 1
    crashes = 0
    while specs:
        crashes += sum(s["kind"] == "crash" for s in specs)
        if crashes > cap:  # the estimate before wave 1 was too low: stop here, keep what is done
            raise AlarmkitError(
                f"crash wave {wave} would bring the crash-point runs to {crashes:,}, above the cap "
                f"max_crash_runs={cap:,}; the {1 + len(results):,} runs done are kept; lower the depth "
                f"(now {depth}) or raise the cap (--max-crash-runs, max_crash_runs=)")
        done = run_specs(ctx, specs, pool, width, progress, wave, on_done)
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


def _check_cap(points: int, depth: int, cap: int) -> None:
    """Refuse a crash search the cap cannot hold, before it starts. Each level of crashes has grown
    ~P/2 times the one before (P: crash points of the fault-free run; lease-ledger: 25, 362, 3,947)."""
    growth, level, estimate = max(1.0, points / 2), float(points), 0.0
    for _ in range(depth):
        estimate += level
        level *= growth
        if estimate > 1e15:  # --depth 1000: past any machine, and past a float
            break
    if estimate > cap:
        about = "more than 10^15" if estimate > 1e15 else f"about {estimate:,.0f}"
        raise AlarmkitError(
            f"depth {depth} would make {about} crash-point runs ({points} crash points in the "
            f"fault-free run, each level ~{growth:.0f}x the one before), above the cap max_crash_runs={cap:,}; "
            f"lower the depth or raise the cap (--max-crash-runs {_round_up(min(estimate, 1e15))}, max_crash_runs= in "
            "Python)")


def _round_up(n: float) -> int:
    step = 10 ** max(0, len(str(int(n))) - 2)
    return int(-(-n // step) * step)


def _check_importable(sc: Any, modules: Iterable[str]) -> None:
    """A scenario defined in a notebook lives in ``__main__``, which pool workers cannot import."""
    main = sys.modules.get("__main__")
    if getattr(sc.fn, "__module__", None) == "__main__" and not getattr(main, "__file__", None) and not modules:
        raise AlarmkitError(
            f"scenario {sc.name!r} is defined in this notebook (module __main__), which the pool's worker "
            "processes cannot import: pass workers=1 to run here, or move it into a module and pass "
            "modules=['that_module']")


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
        if not 0 <= seeds <= MAX_SEEDS:
            raise AlarmkitError(f"seeds must be a count of random runs in 0..{MAX_SEEDS:,}, got {seeds:,}; for more, "
                                "explore in batches of seeds (explore(..., seeds=range(a, b)))")
        return list(range(seeds))
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= SEED_MAX:
            raise AlarmkitError(f"seeds must all be ints in 0..2**63-1, got {s!r}")
        out.append(s)
        if len(out) > MAX_SEEDS:
            raise AlarmkitError(f"seeds may list at most {MAX_SEEDS:,} seeds; explore in batches")
    return out


# -- results --------------------------------------------------------------------------------------


def _table(results: list[SweepRun], run_ids: dict, out_dir: Path | None) -> pd.DataFrame:
    if out_dir is not None:
        df = results_table(out_dir)  # what the workers wrote, read back by DuckDB as one table
    else:
        df = normalize_table(pd.DataFrame([r.row for r in results]).sort_values("idx", kind="stable"))
    df["run_id"] = pd.array([run_ids.get(i) for i in df["idx"]], dtype="Int64")
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
        known = SCENARIOS.get(ctx["scenario"])  # registered now, maybe not when the snippet is printed
        out.append(Counterexample(ctx["scenario"], inv, obj, message, plan, seed, ctx["params"],
                                  ctx["profile"], r.row["key"], runs, known.replay_setup() if known else ""))
    return out


def _cost(r: SweepRun) -> tuple:
    return (FaultPlan.from_dict(r.plan).size(), r.row["seed"], r.row["idx"])


def results_table(out: str | Path) -> pd.DataFrame:
    """Read the Parquet files an exploration wrote to ``out`` back as one table (DuckDB)."""
    import duckdb

    # the files by name, not a glob pattern: a folder named with "[", "*" or some non-ASCII letters
    # (U+D7FC) is not found by DuckDB's glob
    files = sorted(str(p.resolve()) for p in Path(out).glob("runs-*.parquet"))
    if not files:
        raise AlarmkitError(f"no runs-*.parquet in {str(out)!r}; each exploration writes into its own subfolder "
                            "of out= (its Exploration.out, printed by the CLI as 'results:')")
    _warn_if_partial(Path(out))
    con = duckdb.connect()
    try:
        return normalize_table(con.execute("SELECT * FROM read_parquet(?) ORDER BY idx", [files]).df())
    finally:
        con.close()


def _warn_if_partial(out: Path) -> None:
    """An exploration that did not finish says so (its folder's progress.json), with what it holds."""
    import json
    import warnings

    try:
        progress = json.loads((out / "progress.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a folder from before progress.json: nothing to say either way
    if isinstance(progress, dict) and progress.get("state") != "complete":
        warnings.warn(f"{str(out)!r}: this exploration is {progress.get('state')!r}, not complete: "
                      f"{progress.get('runs')} runs kept; {progress.get('note')}", RuntimeWarning, stacklevel=3)

from .._public import publish as _publish  # noqa: E402

_publish("alarmkit.explore", globals(), __all__)
