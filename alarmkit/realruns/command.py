"""The real-runs subcommands: ``export --format perfetto``, ``import`` and ``record``.

``add_commands(sub, export)`` is the one call ``alarmkit.cli.build_parser`` makes: it adds
``--format`` to ``export`` (wrapping its function) and registers the other subcommands.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import AlarmkitError
from .._text import clean

__all__ = ["add_commands", "open_journal"]


def add_commands(sub, export: argparse.ArgumentParser) -> None:
    export.add_argument("--format", choices=["html", "perfetto"], default="html",
                        help="html (default): a report; perfetto: Chrome Trace Event JSON for ui.perfetto.dev")
    html_fn = export.get_default("fn")
    export.set_defaults(fn=lambda args: cmd_export_perfetto(args) if args.format == "perfetto" else html_fn(args))
    register(sub)


def open_journal(db: str, *, read_only: bool = False):
    """``Journal(db)``: its own checks refuse a file that is not a journal, naming what it is."""
    from ..journal import Journal

    return Journal(db, read_only=read_only)


def cmd_export_perfetto(args: argparse.Namespace) -> int:
    from .perfetto import export_perfetto

    if not Path(args.db).is_file():
        raise AlarmkitError(f"no journal file {args.db}; write one with `alarmkit run ... --db {args.db}`")
    journal = open_journal(args.db, read_only=True)  # works on a read-only file and beside a notebook
    try:
        out = export_perfetto(journal, [args.run_id], args.out or f"run-{args.run_id}.perfetto.json")
    finally:
        journal.close()
    print(clean(f"wrote {out} ({out.stat().st_size / 1e3:.1f} kB); open it at https://ui.perfetto.dev "
                "(Open trace file)"))
    return 0


def _ms(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole milliseconds, got {text[:40]!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected milliseconds >= 0, got {v}")
    if v > 10**12:
        raise argparse.ArgumentTypeError(f"expected at most 10**12 milliseconds (31 years), got {text[:40]}")
    return v


def register(sub) -> None:
    imp = sub.add_parser("import", help="import Tail Worker, Logpush or streaming tail events as one run")
    imp.add_argument("file", help="JSON Lines or a JSON array of TraceItems, workers_trace_events or tail stream events")
    imp.add_argument("--db", required=True, help="journal file to add the run to (made if new)")
    imp.add_argument("--late-ms", type=_ms, default=None, help="a first run later than this is a late fire (default 1000)")
    imp.add_argument("--grace-ms", type=_ms, default=None,
                     help="an arm with no alarm() by its time plus this is an anomaly (default 60000)")
    imp.add_argument("--again", action="store_true",
                     help="add the file even if the journal already holds a run imported from the same bytes")
    imp.add_argument("--json", action="store_true", help="print one JSON object")
    imp.set_defaults(fn=cmd_import)

    rec = sub.add_parser("record", help="run your Durable Object class on local workerd under a driving script, journaled")
    rec.add_argument("--worker", required=True, help="your ES module file, e.g. src/worker.js")
    rec.add_argument("--class", dest="class_name", required=True, help="the Durable Object class it exports")
    rec.add_argument("--drive", dest="drive", default=None, metavar="FILE",
                     help='the drive (JSON or TOML), the format of `alarmkit worker`: {"steps": [{"at": 0, "call": '
                          '"LEDGER", "name": "a", "method": "grant", "args": [...]}], "until": N}')
    rec.add_argument("--script", dest="script", default=None, metavar="FILE", help=argparse.SUPPRESS)  # old name
    rec.add_argument("--db", required=True, help="journal file to add the run to (made if new)")
    rec.add_argument("--out", default=None, help="folder to keep the raw tail.jsonl / stream.jsonl in")
    rec.add_argument("--json", action="store_true", help="print one JSON object")
    rec.set_defaults(fn=cmd_record)


def cmd_import(args: argparse.Namespace) -> int:
    from .importer import GRACE_MS, LATE_MS, import_file

    if not Path(args.file).is_file():
        raise AlarmkitError(f"no trace file {args.file}; pass a JSON Lines or JSON array file of tail or Logpush events")
    journal = open_journal(args.db)
    try:
        result = import_file(args.file, journal, late_ms=LATE_MS if args.late_ms is None else args.late_ms,
                             grace_ms=GRACE_MS if args.grace_ms is None else args.grace_ms, again=args.again)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"import of {clean(args.file)} interrupted; no run was added to {clean(args.db)}") from None
    finally:
        journal.close()
    print(json.dumps(result.to_dict(), default=str) if args.json else result.report())
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from .record import load_script, record

    if (args.drive is None) == (args.script is None):
        raise AlarmkitError("record needs --drive FILE (the drive: the calls to make and until when)"
                            if args.drive is None else "give --drive or its old name --script, not both")
    from .._aliases import note

    notes = []
    if args.script is not None:
        notes.append("--script is the old name of --drive (the one flag of worker, explore and record); it still works")
    script = load_script(args.drive or args.script, notes)  # refused before workerd starts
    for text in notes:  # printed after the command's output by alarmkit.cli, unless it fails with a usage error
        note(args, text)
    journal = open_journal(args.db)
    try:
        result = record(args.worker, args.class_name, script, journal, out_dir=args.out)
    except KeyboardInterrupt:
        raise KeyboardInterrupt("record interrupted; workerd was stopped, its work folder removed, and no run "
                                f"was added to {clean(args.db)}") from None
    finally:
        journal.close()
    report = result.check()
    if args.json:
        print(json.dumps({**result.imported.to_dict(), "calls": result.call_summary(),
                          "check": {**report.summary(), "violations_list": [v.to_dict() for v in report.violations]}},
                         default=str))
        return 0
    print(result.imported.report())
    for line in result.check_lines(report):
        print(clean(line))
    return 0
