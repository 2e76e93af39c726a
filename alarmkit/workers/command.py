"""``alarmkit worker`` and ``alarmkit explore --worker``: the commands behind the CLI entries
(``alarmkit/cli.py`` adds the parsers).

    alarmkit worker --worker src/entry.py [--wrangler wrangler.jsonc] [--bind NAME=Class] --drive drive.json
                    [--db journal.duckdb] [--report out.html] [--seed N] [--profile P] [--json]
                    [--event-limit N] [--wall-limit S] [--memory-limit MB]
    alarmkit explore --worker src/entry.py --drive drive.json [--invariant expect] [--seeds N] ...

Exit codes: 0 the run (or search) found nothing broken; 1 a drive expectation failed or an invariant broke
(``worker``), a violation was found (``explore``); 2 a usage problem
(no such file or class, a syntax error in the module, a malformed drive), one line on stderr.
Everything printed is free of control characters: a worker's own text (a response body, a log line,
an error) is shown with them escaped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .._text import clean as _clean
from ..errors import AlarmkitError, WorkerError
from ..kernel import EVENT_LIMIT, MAX_MEMORY_MB, MAX_WALL_S, MEMORY_LIMIT_MB, WALL_LIMIT_S

__all__ = ["add_arguments", "add_explore_arguments", "run_command", "run_explore", "clean", "refuse_worker_flags"]

def clean(text: Any, limit: int = 300) -> str:
    """``text`` for a terminal (``alarmkit._text.clean``), at most ``limit`` characters."""
    return _clean(text, limit=limit)


def _bind(text: str) -> tuple[str, str]:
    name, sep, cls = text.partition("=")
    if not sep or not name.isidentifier() or not cls.isidentifier():
        raise argparse.ArgumentTypeError(f"--bind takes BINDING=Class (identifiers), got {clean(text, 60)!r}")
    return name, cls


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wrangler", default=None, metavar="FILE",
                   help="wrangler.jsonc / .json / .toml: Durable Object bindings, vars, compatibility_date, main")
    p.add_argument("--bind", action="append", type=_bind, default=[], metavar="NAME=Class",
                   help="bind a Durable Object class of the module (repeatable; adds to or overrides --wrangler)")
    p.add_argument("--compat", default=None, metavar="DATE", help="compatibility date (default: the wrangler file's)")
    p.add_argument("--event-limit", type=_event_limit, default=EVENT_LIMIT, metavar="N",
                   help=f"journal events one run of the drive may add before it stops (default {EVENT_LIMIT:,}; 0: no limit)")
    p.add_argument("--wall-limit", type=_wall_limit, default=WALL_LIMIT_S, metavar="S",
                   help=f"wall-clock seconds one step of a Python Worker's code may run (default {WALL_LIMIT_S:g}; 0: no limit)")
    p.add_argument("--memory-limit", type=_memory_limit, default=MEMORY_LIMIT_MB, metavar="MB",
                   help=f"MB one step of a Python Worker's code may grow the process's memory (default "
                        f"{MEMORY_LIMIT_MB:,}; 0: no limit; Linux only)")


_WORKER_ONLY = {"drive": None, "wrangler": None, "bind": [], "compat": None, "event_limit": EVENT_LIMIT,
                "wall_limit": WALL_LIMIT_S, "memory_limit": MEMORY_LIMIT_MB}  # --invariant works with a scenario too


def refuse_worker_flags(args: argparse.Namespace) -> None:
    """``explore SCENARIO`` with a flag that only ``explore --worker`` reads: refused by name, not ignored
    (``--event-limit 1`` ran the whole exploration and exited 0)."""
    given = [k for k, default in _WORKER_ONLY.items() if getattr(args, k, default) != default]
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise AlarmkitError(f"explore {clean(args.scenario, 60)}: {flags} only work{'s' * (len(given) == 1)} with --worker ENTRY --drive FILE "
                            "(a built-in scenario has its own drive and limits); drop them, or explore "
                            "your worker: alarmkit explore --worker ENTRY --drive FILE")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--worker", dest="entry_flag", default=None, metavar="ENTRY",
                   help="the worker module (src/entry.py, or src/index.ts for the JS host); optional when --wrangler "
                        "names main (the same flag as explore --worker and record --worker)")
    p.add_argument("entry", nargs="?", default=None, help="the old spelling of --worker ENTRY; still works")
    p.add_argument("--drive", required=True, metavar="FILE", help="drive script: requests and waits (.json or .toml)")
    _common(p)
    p.add_argument("--db", default=None, help="journal file (DuckDB) to append the run to; default: in memory")
    p.add_argument("--report", default=None, metavar="FILE", help="HTML report of the run to write, e.g. out.html")
    p.add_argument("--seed", type=_seed, default=0)
    p.add_argument("--profile", default=None, help="runtime profile (default workerd)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--compare-wrangler", action="store_true",
                   help="with --wrangler and wrangler in node_modules: bundle with wrangler's own dry run (offline) "
                        "too, and say whether the two bundles agree (exit 1 when they differ)")


def add_explore_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--worker", default=None, metavar="ENTRY", help="explore your own worker module instead of a scenario")
    p.add_argument("--drive", default=None, metavar="FILE", help="with --worker: the drive script")
    _common(p)
    p.add_argument("--invariant", action="append", default=None, metavar="NAME",
                   help="check only these invariants (repeatable); default all, including expect")


def _event_limit(text: str) -> int | None:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= 2**62:
        raise argparse.ArgumentTypeError(f"--event-limit takes a count of events in 0..2**62 (0: no limit), got "
                                         f"{clean(text, 40)!r}; the default is {EVENT_LIMIT:,}")
    return value or None


def _wall_limit(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_WALL_S:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"--wall-limit takes seconds in 0..{MAX_WALL_S:,.0f} (0: no limit), got "
                                         f"{clean(text, 40)!r}; the default is {WALL_LIMIT_S:g}")
    return value or None


def _memory_limit(text: str) -> int | None:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_MEMORY_MB:
        raise argparse.ArgumentTypeError(f"--memory-limit takes whole MB in 0..{MAX_MEMORY_MB:,} (0: no limit), got "
                                         f"{clean(text, 40)!r}; the default is {MEMORY_LIMIT_MB:,}")
    return value or None


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {clean(text, 40)!r}") from None
    if not 0 <= value <= 2**63 - 1:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**63-1, got {clean(text, 40)}")
    return value


def _fail(err: BaseException) -> int:
    print(f"alarmkit: error: {clean(err, 600)}", file=sys.stderr)
    return 2


def _check_paths(args: argparse.Namespace) -> None:
    from .python._contain import RSS_AVAILABLE

    if getattr(args, "memory_limit", None) not in (None, MEMORY_LIMIT_MB) and not RSS_AVAILABLE:
        from .._aliases import note

        note(args, "--memory-limit is not checked on this system: alarmkit reads a process's memory from "
                   "/proc/self/statm (Linux); --wall-limit and --event-limit still apply")
    entry = getattr(args, "entry", None) or getattr(args, "entry_flag", None) or getattr(args, "worker", None)
    if getattr(args, "memory_limit", None) not in (None, MEMORY_LIMIT_MB) and entry is not None:
        from .._aliases import note
        from ._load import SUFFIXES

        if SUFFIXES.get(Path(entry).suffix.lower()) == "js":
            note(args, "--memory-limit bounds a Python Worker's code; a JavaScript worker runs in node, which it "
                       "does not reach (node's own heap limit applies)")
    for flag, value in (("the worker module", getattr(args, "entry", None) or getattr(args, "worker", None)),
                        ("--drive", args.drive), ("--wrangler", args.wrangler)):
        if value is not None and not Path(value).is_file():
            raise WorkerError(f"{flag}: no file {clean(value, 120)!r}; check the path")


def run_command(args: argparse.Namespace) -> int:
    """``alarmkit worker``: load, drive, print what each request did; journal and report when asked."""
    try:
        return _run(args)
    except AlarmkitError as err:
        return _fail(err)
    except (OSError, RecursionError) as err:
        return _fail(err)


def _run(args: argparse.Namespace) -> int:
    from .._paths import output_file
    from ..journal import Journal
    from ..runtime.profiles import get_profile
    from ..viz.report import export_html, is_report
    from .drive import load_drive
    from .runs import run_worker

    if args.entry is not None and args.entry_flag is not None:
        raise WorkerError("give the worker module once: --worker ENTRY (or the old positional ENTRY), not both")
    if args.entry is not None:
        from .._aliases import note

        note(args, "the positional ENTRY is the old spelling of --worker ENTRY (one flag across worker, explore and "
                   "record); it still works")
    args.entry = args.entry or args.entry_flag
    _check_paths(args)
    if args.entry is None and args.wrangler is None:
        raise WorkerError("no worker module: pass ENTRY (e.g. src/entry.py) or --wrangler with main set")
    if args.profile is not None:
        get_profile(args.profile)
    _precheck(args, load_drive(args.drive))
    compared = _compare(args)
    report = output_file(args.report, "--report", replaceable=is_report, what="report") if args.report else None
    journal = Journal(args.db) if args.db else None
    try:
        result = run_worker(args.entry, args.drive, wrangler=args.wrangler, bindings=dict(args.bind) or None,
                            compatibility_date=args.compat, seed=args.seed, journal=journal, profile=args.profile,
                            event_limit=args.event_limit, wall_limit_s=args.wall_limit,
                            memory_limit_mb=args.memory_limit)
        verdict = result.verdict  # read while the journal is open (a journaled run's events live there)
        if report is not None:
            export_html(result, report)
        schedules = _schedules(result)  # read while the journal is open (sim.events() reads it)
        refusals = _refusals(result)
    finally:
        if journal is not None:
            journal.close()
    summary = {"run_id": result.run_id, "seed": result.seed, "profile": result.profile, "events": result.event_count,
               "attempts": result.attempts, "requests": result["requests"], "failed": result["failed"],
               "pending": result["pending"], "expectations": result["expectations"],
               "expect_failures": result["expect_failures"], "outcomes": result["outcomes"], "final_alarms": _alarms(result),
               "verdict": verdict.to_dict(), "entry": args.entry or "", "drive": args.drive,
               "bindings": _bindings(result), "library_schedules": schedules, "refusals": refusals,
               "logs": [list(x) for x in result["logs"]]}
    if compared is not None:
        summary["wrangler_bundle"] = compared.to_dict()
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print(_readable(summary, args, report) + ("" if compared is None else "\n" + compared.line()))
    differs = compared is not None and not compared.agree
    return 1 if result["expect_failures"] or verdict.status == "broken" or differs else 0


def _compare(args: argparse.Namespace) -> Any:
    """``--compare-wrangler``: wrangler's dry-run bundle beside the host's (js/wrangler_bundle.py), before any
    file is written; None without the flag."""
    if not getattr(args, "compare_wrangler", False):
        return None
    if args.wrangler is None:
        raise WorkerError("--compare-wrangler needs --wrangler wrangler.jsonc (wrangler bundles what that file "
                          "names); pass it, or leave --compare-wrangler out")
    from .js.wrangler_bundle import compare_wrangler

    return compare_wrangler(args.wrangler, args.entry)


def _precheck(args: argparse.Namespace, drive: Any) -> None:
    """Load the worker into a scratch simulation and check the drive against it, so a bad module, class or
    method is refused before a journal or report file is made."""
    from ..runtime import Simulation
    from ._load import load_worker

    worker = load_worker(Simulation(seed=0, wall_limit_s=args.wall_limit, memory_limit_mb=args.memory_limit), args.entry if getattr(args, "entry", None) else getattr(args, "worker", None),
                         bindings=dict(args.bind) or None, wrangler=args.wrangler, compatibility_date=args.compat)
    drive.check(worker)


def _bindings(result: Any) -> dict:
    """binding name -> class name, as the run used them (the wrangler file's and --bind's)."""
    return dict(result.params.get("bindings") or {}) or {k: v for k, v in getattr(result.sim, "bindings", {}).items()
                                                          if isinstance(v, str)}


def _alarms(result: Any) -> dict:
    sim = result.sim
    return {k: (None if v is None else v - sim.start_ms) for k, v in sim.alarms().items()}


def _schedules(result: Any) -> list[dict]:
    """The schedules a library (Agents SDK, Actors) kept in its own table, as it saw them (docs/workers.md)."""
    import pandas as pd

    from ..journal import library_schedules

    df = library_schedules(result.sim.events())
    return [{k: (None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v) for k, v in row.items()}
            for row in df.astype(object).to_dict("records")]


def _schedule_line(d: dict) -> str:
    end = f" at {d['ended_ms']} ms" if d["ended_ms"] is not None and d["outcome"] != "pending" else ""
    tries = f" after {d['attempts']} attempt{'s' * (d['attempts'] != 1)}" if d["attempts"] is not None else ""
    err = f": {d['error']}" if d["error"] else ""
    return (f"  {d['library']} schedule {d['id']} {d['callback']}() on {d['object']} due {d['due_ms']} ms: "
            f"{d['outcome']}{end}{tries}{err}")


def _refusals(result: Any) -> dict:
    """How many ``refused`` events the run journaled, and the first one's time and text (cut)."""
    ev = result.events
    rows = ev[ev["kind"] == "refused"] if ev is not None and len(ev) else ev
    if rows is None or not len(rows):
        return {"count": 0, "first": None, "first_ms": None}
    try:
        text = str(json.loads(rows.iloc[0]["detail"]).get("text", ""))
    except (TypeError, ValueError, AttributeError):
        text = ""
    return {"count": int(len(rows)), "first": text[:300], "first_ms": int(rows.iloc[0]["t_ms"])}


def _readable(s: dict, args: argparse.Namespace, report: Path | None) -> str:
    from ..scenarios.registry import attempt_text

    where = f"run {s['run_id']} in {clean(args.db, 120)}" if s["run_id"] is not None else "not journaled: --db FILE keeps it"
    lines = ["verdict: " + "\n  ".join(s["verdict"]["lines"])] if s.get("verdict") else []
    lines += [f"worker (profile {s['profile']}, seed {s['seed']}, {where}): {s['events']} events, "
             f"{s['requests']} request{'s' * (s['requests'] != 1)}, {s['failed']} failed, {s['pending']} still running at the end"]
    ref = s.get("refusals") or {}
    if ref.get("count"):
        lines.append(clean(f"refusals: {ref['count']} (journaled as refused events; first at {ref['first_ms']} ms: "
                           f"{ref['first']})", 300))
    for o in s["outcomes"]:
        end = f"-> {o['done_ms']} ms" if "done_ms" in o else "-> still running"
        if "error" in o:
            got = f"error {o['error']}"
        elif "status" in o:
            got = f"{o['status']} {o['body']!r}"
        else:
            got = f"= {json.dumps(o.get('value'), default=str)}" if "value" in o else ""
        lines.append(clean(f"  {o['t_ms']:>9} ms  {o['what']}  {end}  {got}", 200))
    for a in s["attempts"]:
        lines.append(clean(f"  alarm() at {a['t_ms']:>9} ms  retry_count={a['retry_count']}  {a['object_id']}  "
                           f"{attempt_text(a)}", 300))
    lines += [clean(_schedule_line(d), 300) for d in s["library_schedules"]]
    # what the worker wrote at level error (an uncaught exception behind a 500 among them), as wrangler dev's
    # terminal shows it: the first 20 here, every line in --json's "logs" and in the journal's console events
    errors = [x for x in s.get("logs", []) if x[1] == "error"]
    lines += [clean(f"  console.error at {t:>6} ms  {text}", 300) for t, _, text in errors[:20]]
    if len(errors) > 20:
        lines.append(f"  ... {len(errors) - 20} more console.error lines: --json has them all (\"logs\")")
    alarms = ", ".join(f"{k}: {'none' if v is None else f'{v} ms'}" for k, v in s["final_alarms"].items()) or "no objects"
    lines.append(clean(f"  alarms left: {alarms}", 400))
    for f in s["expect_failures"]:
        lines.append(clean(f"  EXPECT FAILED: {f}", 400))
    if not s["expect_failures"]:
        n = s["expectations"]
        lines.append(f"  all {n} expectation{'s' * (n != 1)} of the drive held" if n else
                     "  the drive states no expectations: nothing was checked at the end (\"expect\" in the drive says what must hold)")
    if report is not None:
        lines.append(clean(f"wrote {report}", 200))
    return "\n".join(x for x in lines if x)


def run_explore(args: argparse.Namespace) -> int:
    """``alarmkit explore --worker ENTRY --drive F``: crash points and fault plans on your worker."""
    try:
        return _explore(args)
    except AlarmkitError as err:
        return _fail(err)
    except (OSError, RecursionError) as err:
        return _fail(err)


def _explore(args: argparse.Namespace) -> int:
    from ..explore import MAX_CRASH_RUNS
    from ..runtime.faults import FaultPlan
    from .runs import explore_worker

    if args.drive is None:
        raise WorkerError("explore --worker needs --drive FILE: the requests that give the worker work to do")
    _check_paths(args)
    if getattr(args, "scenario", None):
        raise WorkerError(f"give a scenario or --worker, not both (got scenario {clean(args.scenario, 60)!r})")
    from .drive import load_drive

    _precheck(args, load_drive(args.drive))
    faults = FaultPlan.load(args.faults) if args.faults else None
    if args.workers == 0:
        raise AlarmkitError("--workers must be at least 1")
    if args.max_crash_runs == 0:
        raise AlarmkitError("--max-crash-runs must be at least 1")
    result = explore_worker(
        args.worker, args.drive, wrangler=args.wrangler, bindings=dict(args.bind) or None,
        compatibility_date=args.compat, event_limit=args.event_limit, wall_limit_s=args.wall_limit,
        memory_limit_mb=args.memory_limit,
        faults=faults, seeds=args.seeds, depth=args.depth,
        crash_points=None if args.crash_points == "none" else args.crash_points, workers=args.workers,
        journal=args.db, out=args.out, progress=not args.json, strict=args.strict,
        max_crash_runs=args.max_crash_runs or MAX_CRASH_RUNS, invariants=args.invariant,
    )
    if args.json:
        print(json.dumps(result.to_dict(), default=str))
    else:
        print("\n".join(clean(line, 2000) for line in result.report().splitlines()))
        if result.out is not None:
            print(clean(f"results: {result.out}", 400))
    for w in result.warnings:
        print(clean(f"alarmkit: warning: {w}", 600), file=sys.stderr)
    return result.exit_code  # 1: a violation found; 0: none
