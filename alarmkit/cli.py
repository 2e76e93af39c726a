"""``alarmkit``: run scenarios, list them, and (from other modules) explore, export, calibrate.

Every subcommand is one function ``cmd_<name>(args) -> int`` plus its entry in ``build_parser``.
Bad arguments exit with code 2 and a message that names the value and the way out.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from .errors import AlarmkitError

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code for usage errors is 2 too
        self.print_usage(sys.stderr)
        print(f"alarmkit: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer, got {text!r}") from None


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
        return key, json.loads(value)  # numbers, lists, true/false; never eval
    except json.JSONDecodeError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    from .profiles import PROFILES

    p = _Parser(prog="alarmkit", description="Simulate Durable Object alarms under a virtual clock.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run one scenario and write its journal")
    run.add_argument("scenario", help="a name from `alarmkit list`")
    run.add_argument("--seed", type=_seed, default=0)
    run.add_argument("--db", default=None, help="journal file (DuckDB); default: in memory")
    run.add_argument("--profile", choices=sorted(PROFILES), default=None, help="run under another runtime profile")
    run.add_argument("--set", dest="params", type=_param, action="append", default=[], metavar="NAME=VALUE",
                     help="override a scenario parameter (JSON value)")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(fn=cmd_run)

    ls = sub.add_parser("list", help="name the built-in scenarios")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)

    demo = sub.add_parser("demo", help="run every built-in scenario into one journal and write one HTML report each")
    demo.add_argument("--db", default="journal.duckdb")
    demo.add_argument("--out", default="reports", help="folder for the HTML reports")
    demo.add_argument("--seed", type=_seed, default=1)
    demo.set_defaults(fn=cmd_demo)

    export = sub.add_parser("export", help="write one run of a journal as a self-contained HTML report")
    export.add_argument("--db", required=True, help="journal file (DuckDB), e.g. journal.duckdb")
    export.add_argument("--run", dest="run_id", type=_run_id, required=True, help="a run id from the journal")
    export.add_argument("--out", default=None, help="HTML file to write; default: run-<ID>.html")
    export.set_defaults(fn=cmd_export)
    from .realruns.command import add_commands as realruns_commands  # export --format perfetto, import, record

    realruns_commands(sub, export)

    ex = sub.add_parser("explore", help="search crash points and random faults for lost or duplicated work")
    ex.add_argument("scenario", help="a name from `alarmkit list` (e.g. lease-ledger, lease-no-revival)")
    ex.add_argument("--seeds", type=_count, default=100, help="random runs (seeds 0..N-1); default 100")
    ex.add_argument("--faults", default=None, metavar="FILE",
                    help="a FaultPlan (.json or .toml) applied to every run instead of random plans")
    ex.add_argument("--depth", type=_count, default=2, help="crashes stacked per crash-point run; default 2")
    ex.add_argument("--crash-points", choices=["all", "alarm", "none"], default="all",
                    help="which tasks' awaits to crash at; default all")
    ex.add_argument("--workers", type=_count, default=None, help="local processes; default: one per core")
    ex.add_argument("--db", default=None, help="journal file (DuckDB) to write every run to")
    ex.add_argument("--out", default=None, help="folder for the Parquet result files")
    ex.add_argument("--json", action="store_true", help="print one JSON object")
    ex.set_defaults(fn=cmd_explore)

    from .calibrate.command import add_arguments as calibrate_arguments

    cal = sub.add_parser("calibrate", help="run the probes on real workerd and in the simulator; report where they differ")
    calibrate_arguments(cal)
    cal.set_defaults(fn=cmd_calibrate)
    return p


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate.command import run_command

    return run_command(args)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def cmd_explore(args: argparse.Namespace) -> int:
    from .explore import explore
    from .faults import FaultPlan

    faults = FaultPlan.load(args.faults) if args.faults else None
    if args.workers == 0:
        raise AlarmkitError("--workers must be at least 1")
    result = explore(
        args.scenario, faults=faults, seeds=args.seeds, depth=args.depth,
        crash_points=None if args.crash_points == "none" else args.crash_points,
        workers=args.workers, journal=args.db, out=args.out, progress=not args.json, quiet=True,
    )
    if args.json:
        print(json.dumps(result.to_dict(), default=str))
    else:
        print(result.report())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .scenarios import run_scenario

    journal = _open_journal(args.db)
    try:
        result = run_scenario(args.scenario, seed=args.seed, journal=journal, profile=args.profile, **dict(args.params))
    finally:
        if journal is not None:
            journal.close()
    result.pop("sim", None)
    if args.json:
        print(json.dumps(result, default=str))
        return 0
    print(_readable(result))
    return 0


def _readable(r: dict) -> str:
    lines = [f"{r['scenario']} (profile {r['profile']}, seed {r['seed']}, run {r['run_id']}): {r['events']} events"]
    for a in r["attempts"]:
        lines.append(f"  alarm() at {a['t_ms'] / 1000:>9.3f} s  retry_count={a['retry_count']}  {a['object_id']}")
    if not r["attempts"]:
        lines.append("  alarm() never ran")
    eff = ", ".join(f"{k} x{v}" for k, v in r["effects"].items()) or "none"
    lines.append(f"  effects: {eff}")
    if "final_alarm" in r:
        lines.append(f"  final alarm: {r['final_alarm']}")
    if "rows_left" in r:
        lines.append(f"  rows left: {r['rows_left'] or 'none'}")
    lines.extend(r.get("report", []))  # a scenario's own readable lines (the guestbook scenarios have some)
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    from .scenarios import list_scenarios

    items = list_scenarios()
    if args.json:
        print(json.dumps([{"name": s.name, "description": s.description, "profile": s.profile, "params": s.params}
                          for s in items], default=str))
        return 0
    width = max(len(s.name) for s in items)
    for s in items:
        print(f"{s.name:<{width}}  {s.description}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .report import export_run

    if not Path(args.db).is_file():
        raise AlarmkitError(f"no journal file {args.db}; write one with `alarmkit demo --db {args.db}` or `alarmkit run ... --db`")
    journal = _open_journal(args.db)
    try:
        out = export_run(journal, args.run_id, args.out or f"run-{args.run_id}.html")
    finally:
        journal.close()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(db=args.db, out=args.out, seed=args.seed)
    return 0


def _open_journal(path: str | None):
    from .journal import Journal

    return Journal(path) if path else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except AlarmkitError as err:
        print(f"alarmkit: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
