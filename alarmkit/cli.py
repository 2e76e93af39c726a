"""``alarmkit``: run scenarios, list them, and (from other modules) explore, export, calibrate.

Every subcommand is one function ``cmd_<name>(args) -> int`` plus its entry in ``build_parser``.
Bad arguments exit with code 2 and a message that names the value and the way out.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any, Sequence

from ._signals import CtrlC
from .errors import AlarmkitError, InternalError
from ._text import Terminal as _Terminal, cut, one_line, short_repr

__all__ = ["main", "build_parser"]



class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code for usage errors is 2 too
        self.print_usage(sys.stderr)
        print(f"alarmkit: error: {one_line(message)}", file=sys.stderr)  # "unrecognized arguments" are shown raw
        raise SystemExit(2)


def _seed(text: str) -> int:
    from .kernel import SEED_MAX

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {text[:40]!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**63-1 ({SEED_MAX}), got {text[:40]}")
    return value


def _run_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"run ids are integers, got {text!r}; `alarmkit export --db F --run 1`") from None


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"parameters look like name=value, got {text!r}")
    try:
        return key, json.loads(value, parse_constant=_no_constant)  # numbers, lists, true/false; never eval
    except RecursionError:
        raise argparse.ArgumentTypeError(f"--set {key}: the value is nested too deeply ({len(value):,} characters "
                                         "of brackets); parameters are numbers, text or flat lists") from None
    except json.JSONDecodeError as err:
        if value[:1] in ("[", "{", '"', "-", ".") or value[:1].isdigit():  # meant as JSON, and broken
            raise argparse.ArgumentTypeError(
                f"--set {key}: {value[:60]!r} is not valid JSON ({err.msg}, column {err.colno}); "
                f"lists look like --set '{key}=[100, 900]'") from None
        return key, value  # a bare word is text: --set outage=restart


def _no_constant(name: str) -> None:
    raise argparse.ArgumentTypeError(f"{name} is not a value alarmkit takes; parameters are finite numbers, "
                                     "text, true/false, null or lists of them")


def build_parser() -> argparse.ArgumentParser:
    from .runtime.profiles import PROFILES

    from ._version import __version__

    p = _Parser(prog="alarmkit", description="Simulate Durable Object alarms under a virtual clock. Exit codes: "
                "0 nothing broken; 1 a run broke an invariant or expectation (run, worker, explore); 2 a usage "
                "error (one line on stderr); 130 Ctrl-C.")
    p.add_argument("--version", action="version", version=f"alarmkit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run one scenario; --db FILE journals it")
    run.add_argument("scenario", help="a name from `alarmkit list`")
    run.add_argument("--seed", type=_seed, default=0)
    run.add_argument("--db", default=None, help="journal file (DuckDB); default: in memory")
    run.add_argument("--profile", choices=sorted(PROFILES), default=None, help="run under another runtime profile")
    run.add_argument("--set", dest="params", type=_param, action="append", default=[], metavar="NAME=VALUE",
                     help="override a scenario parameter (JSON value)")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--cpu-time", type=_cpu_time, default=None, metavar="MS|measured",
                     help="code's cost to the clock: MS per alarm() run, or measured (docs/runtime.md)")
    run.add_argument("--max-work", type=_count, default=None, metavar="UNITS",
                     help="cap on the run's estimated work (default 2,000,000 units, about 1 GB); raise it for a bigger run")
    run.set_defaults(fn=cmd_run)

    ls = sub.add_parser("list", help="name the built-in scenarios")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)

    demo = sub.add_parser(
        "demo", help="run every built-in scenario into one journal and write one HTML report each",
        description="Run every built-in scenario into one journal and write one HTML report each. "
                    "An existing journal keeps its runs: the demo appends new ones (--fresh empties it first). "
                    "A --db file that is not an alarmkit journal, or that another process holds open, is "
                    "refused and left untouched. In --out the demo writes <scenario>.html, replacing only "
                    "reports alarmkit wrote; it deletes nothing.")
    demo.add_argument("--db", default="journal.duckdb", help="journal file (DuckDB); default journal.duckdb")
    demo.add_argument("--fresh", action="store_true",
                      help="empty the journal's runs and events first (only an alarmkit journal; nothing else)")
    demo.add_argument("--out", default="reports", help="folder for the HTML reports; default reports")
    demo.add_argument("--seed", type=_seed, default=1)
    demo.set_defaults(fn=cmd_demo)

    export = sub.add_parser("export", help="write one run of a journal as a self-contained HTML report",
                            description="Write one run of a journal as a self-contained HTML report. The journal "
                                        "is only read (a read-only file works, and so does one a notebook has "
                                        "open read-only). An existing --out file is replaced only if it is an "
                                        "alarmkit report.")
    export.add_argument("--db", required=True, help="journal file (DuckDB), e.g. journal.duckdb")
    export.add_argument("--run", dest="run_id", type=_run_id, required=True, help="a run id from the journal")
    from ._aliases import add as add_renamed

    add_renamed(export, "--report", "--out", dest="out", default=None, metavar="FILE",
                help="HTML file to write; default: run-<ID>.html")
    export.set_defaults(fn=cmd_export)
    from .realruns.command import add_commands as realruns_commands  # export --format perfetto, import, record

    realruns_commands(sub, export)

    ex = sub.add_parser("explore", help="search crash points and random faults for lost or duplicated work")
    ex.add_argument("scenario", nargs="?", default=None,
                    help="a name from `alarmkit list` (e.g. lease-ledger, lease-no-revival), or --worker ENTRY")
    ex.add_argument("--seeds", type=_count, default=100, help="random runs (seeds 0..N-1); default 100")
    ex.add_argument("--faults", default=None, metavar="FILE",
                    help="a FaultPlan (.json or .toml) applied to every run instead of random plans")
    ex.add_argument("--depth", type=_count, default=2, help="crashes stacked per crash-point run; default 2")
    ex.add_argument("--crash-points", choices=["all", "alarm", "none"], default="all",
                    help="which tasks' awaits to crash at; default all")
    ex.add_argument("--workers", type=_count, default=None, help="local processes; default: one per core")
    ex.add_argument("--db", default=None, help="journal file (DuckDB) to write every run to")
    ex.add_argument("--out", default=None,
                    help="folder for the Parquet result files (each call writes a new subfolder of it)")
    ex.add_argument("--max-crash-runs", type=_count, default=None, metavar="N",
                    help="cap on crash-point runs; a deeper search stops before it starts (default 100000)")
    ex.add_argument("--strict", action="store_true",
                    help="a fault plan entry that injected nothing in any run is an error (exit 2), not a warning")
    ex.add_argument("--json", action="store_true", help="print one JSON object")
    ex.set_defaults(fn=cmd_explore)
    from .workers.command import add_arguments as worker_arguments, add_explore_arguments

    add_explore_arguments(ex)
    wk = sub.add_parser("worker", help="run your own worker module (e.g. a Python Worker) on a drive script")
    worker_arguments(wk)
    wk.set_defaults(fn=cmd_worker)

    from .calibrate.command import add_arguments as calibrate_arguments

    cal = sub.add_parser("calibrate", help="run the probes on real workerd and in the simulator; report where they differ")
    calibrate_arguments(cal)
    cal.set_defaults(fn=cmd_calibrate)

    from .diff.command import add_arguments as diff_arguments

    dif = sub.add_parser("diff", help="diff two runs (one journal or two), down to the first divergence")
    diff_arguments(dif)
    dif.set_defaults(fn=cmd_diff)

    from .viz.bundle import add_arguments as notebooks_arguments

    nbs = sub.add_parser("notebooks", help="execute every notebook and export it to HTML, with an index page")
    notebooks_arguments(nbs)
    nbs.set_defaults(fn=cmd_notebooks)

    from .journal.command import add_arguments as journal_arguments, run_command as journal_command

    jr = sub.add_parser("journal", help="journal upkeep: `journal runs --db J` lists its runs, "
                                        "`journal recover SPILL --db J` writes spilled events back")
    journal_arguments(jr)
    jr.set_defaults(fn=journal_command)
    return p


def cmd_notebooks(args: argparse.Namespace) -> int:
    from .viz.bundle import run_command

    return run_command(args)


def cmd_diff(args: argparse.Namespace) -> int:
    from .diff.command import run_command

    return run_command(args)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate.command import run_command

    return run_command(args)


def _cpu_time(text: str) -> str | int:
    from .runtime import parse_cpu_time

    try:
        return parse_cpu_time(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def cmd_worker(args: argparse.Namespace) -> int:
    from .workers.command import run_command

    return run_command(args)


def cmd_explore(args: argparse.Namespace) -> int:
    if args.worker is not None:
        from .workers.command import run_explore

        return run_explore(args)
    if args.scenario is None:
        raise AlarmkitError("explore needs a scenario (a name from `alarmkit list`) or --worker ENTRY --drive FILE")
    from .workers.command import refuse_worker_flags

    refuse_worker_flags(args)  # --event-limit, --drive... with a scenario: refused, never ignored
    from .errors import PlanNotApplied
    from .explore import MAX_CRASH_RUNS, explore
    from .runtime.faults import FaultPlan

    faults = FaultPlan.load(args.faults) if args.faults else None
    if args.workers == 0:
        raise AlarmkitError("--workers must be at least 1")
    if args.max_crash_runs == 0:
        raise AlarmkitError("--max-crash-runs must be at least 1")
    try:
        result = explore(
            args.scenario, faults=faults, seeds=args.seeds, depth=args.depth,
            crash_points=None if args.crash_points == "none" else args.crash_points,
            workers=args.workers, journal=args.db, out=args.out, progress=not args.json,
            strict=args.strict, max_crash_runs=args.max_crash_runs or MAX_CRASH_RUNS, invariants=args.invariant,
        )
    except PlanNotApplied as err:  # strict: show what was found, then the error (exit 2)
        _print_exploration(err.exploration, args.json)
        raise
    _print_exploration(result, args.json)
    return result.exit_code  # 1: a violation found (CI fails, as pytest on a failure); 0: none


def _print_exploration(result, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.to_dict(), default=str))
    else:
        print(result.report())  # the counterexamples as snippets, the warnings
        if result.out is not None:
            print(f"results: {result.out}")
    for w in result.warnings:
        print(f"alarmkit: warning: {one_line(w)}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from .scenarios.registry import check_params, run_scenario

    params = dict(args.params)
    check_params(args.scenario, params, args.max_work or None)  # before the journal file is made
    journal = _open_journal(args.db)
    try:
        result = run_scenario(args.scenario, seed=args.seed, journal=journal, profile=args.profile,
                              max_work=args.max_work or None, cpu_time=args.cpu_time, **params)
        verdict = result.verdict  # said first: what the run's checks found (read while the journal is open)
    except (TypeError, ValueError, ArithmeticError) as err:
        if not params:
            raise  # the built-in scenario with its own defaults failing is a bug: keep the traceback
        # a value of the right shape can still be out of what the scenario can do (ttl=0 arms an
        # alarm at time 0, which workerd refuses): name the values set, not a traceback
        given = ", ".join(f"{k}={json.dumps(v)}" for k, v in params.items())
        raise AlarmkitError(f"scenario {args.scenario!r} with {given} failed: {type(err).__name__}: {err}; "
                            "the value is outside what the scenario can run (`alarmkit list --json` shows "
                            "its defaults)") from None
    finally:
        if journal is not None:
            journal.close()
    result = result.to_dict()
    code = 1 if verdict.status == "broken" else 0  # as pytest on a failure: CI sees a broken run
    if args.json:
        print(json.dumps({"verdict": verdict.to_dict(), **result}, default=str))
        return code
    from ._cli_text import readable

    print("verdict: " + "\n  ".join(verdict.lines()))
    print(readable(result, args.db))
    return code


def cmd_list(args: argparse.Namespace) -> int:
    from ._cli_text import list_json, list_lines
    from .scenarios import list_scenarios

    items = list_scenarios()
    print(list_json(items) if args.json else "\n".join(list_lines(items)))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ._paths import output_file
    from .journal import Journal
    from .viz.report import export_run, is_report

    if not Path(args.db).is_file():
        raise AlarmkitError(f"no journal file {args.db!r}; write one with `alarmkit demo --db FILE` or `alarmkit run ... --db FILE`")
    out = f"run-{args.run_id}.html" if args.out is None else args.out
    from ._aliases import flag

    target = output_file(out, flag(args, "out", "--report"), replaceable=is_report, what="report")
    journal = Journal(args.db, read_only=True)  # a reader: works on a read-only file and beside other readers
    try:
        out = export_run(journal, args.run_id, target)
    finally:
        journal.close()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(db=args.db, out=args.out, seed=args.seed, fresh=args.fresh)
    return 0


def _open_journal(path: str | None):
    from .journal import Journal

    return None if path is None else Journal(path)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("alarmkit: interrupted (Ctrl-C) before any command ran; nothing was done", file=sys.stderr)
        return 130
    out = sys.stdout
    sys.stdout = _Terminal(out)  # everything a command prints: paths, names, ids from a journal
    ctrl_c = CtrlC()
    try:
        from ._paths import refuse_empty_paths

        refuse_empty_paths(args)  # every command's --db "", --out "", --report "": one refusal, before any work
        code = args.fn(args)
        _print_notes(args, code)
        return code
    except InternalError:
        raise  # a bug in alarmkit, not a user error: the traceback is what a bug report needs
    except AlarmkitError as err:
        print(f"alarmkit: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except SystemExit as err:  # alarmkit's commands never raise it past here: the code it ran called sys.exit()
        print(f"alarmkit: error: {_stopped_by_code(args.command, err, f'sys.exit({short_repr(err.code)})')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # one line, the shell's code for SIGINT
        if ctrl_c.said_by_code(err):  # no SIGINT arrived: the code it ran raised KeyboardInterrupt itself
            print(f"alarmkit: error: {_stopped_by_code(args.command, err, 'raise KeyboardInterrupt')}", file=sys.stderr)
            return 2
        # a bare KeyboardInterrupt() has no text: say what was stopped rather than print "alarmkit: "
        said = one_line(str(err)) or (f"{args.command} interrupted (Ctrl-C); what it finished before is kept, "
                                      "the rest was not done")
        print(f"alarmkit: {said}", file=sys.stderr)
        return 130
    except OSError as err:  # the file system said no: a path, a permission, a full disk
        print(f"alarmkit: error: {one_line(_os_error(err))}", file=sys.stderr)
        return 2
    except Exception as err:
        if type(err).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
            raise
        # DuckDB refused a file mid-command: a journal cut short (a copy that stopped, a full disk) reads
        # fine at open and fails at its first block; one line, never a traceback
        print(f"alarmkit: error: {args.command}: DuckDB could not read or write the journal ({one_line(str(err))[:300]}); "
              "the file may be truncated or damaged: pass another --db path, or `alarmkit journal recover` "
              "for rows a failed write left beside it", file=sys.stderr)
        return 2
    finally:
        sys.stdout = out
        ctrl_c.restore()
        # after a one-line error, the coroutines the stopped run never started are collected at exit: their
        # "never awaited" RuntimeWarnings would follow the error line as noise
        warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)


def _print_notes(args: argparse.Namespace, code: int) -> None:
    """An old flag spelling worked: one note each, after the command's output (never beside an error: a usage
    error is one line)."""
    from ._aliases import notes

    if code != 2:
        for text in notes(args):
            print(f"alarmkit: note: {one_line(text)}", file=sys.stderr)


def _stopped_by_code(command: str, err: BaseException, what: str) -> str:
    """The message for a run a user's code stopped (``sys.exit()``, ``raise KeyboardInterrupt``): never a
    success, never mistaken for Ctrl-C. The runtime's note says which object and when."""
    notes = [n for n in getattr(err, "__notes__", ()) if type(n) is str]  # the runtime's whole, the code's own cut
    theirs = "; ".join(n for n in notes if not n.startswith("raised in the simulated code of"))
    where = "; ".join([n for n in notes if n.startswith("raised in the simulated code of")] + [cut(theirs)] * bool(theirs))
    kept = ("the worker was not loaded, nothing ran" if "(at import" in where else
            "outside any Durable Object, e.g. in the worker's entrypoint; what ran before is kept"
            if "outside any Durable Object" in where else
            "the object is journaled as crashed, what ran before is kept" if where else
            "outside any Durable Object, e.g. in the worker's entrypoint; what ran before is kept")
    return one_line(f"{command}: the code it ran called {what}" + (f" ({where})" if where else "") +
                    f"; the run stopped there, unfinished ({kept}). Let the handler return or raise an ordinary "
                    "exception instead")


def _os_error(err: OSError) -> str:
    what = err.strerror or str(err)
    where = " -> ".join(repr(str(f)) for f in (err.filename, err.filename2) if f is not None)
    return f"{what}: {where}; check the path or pass another one" if where else f"{what}; check the paths given"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
