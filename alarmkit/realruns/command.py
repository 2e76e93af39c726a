"""The real-runs subcommands: ``export --format perfetto``, ``import`` and ``record``.

``add_commands(sub, export)`` is the one call ``alarmkit.cli.build_parser`` makes: it adds
``--format`` to ``export`` (wrapping its function) and registers the other subcommands.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import AlarmkitError

__all__ = ["add_commands"]


def add_commands(sub, export: argparse.ArgumentParser) -> None:
    export.add_argument("--format", choices=["html", "perfetto"], default="html",
                        help="html (default): a report; perfetto: Chrome Trace Event JSON for ui.perfetto.dev")
    html_fn = export.get_default("fn")
    export.set_defaults(fn=lambda args: cmd_export_perfetto(args) if args.format == "perfetto" else html_fn(args))
    register(sub)


def cmd_export_perfetto(args: argparse.Namespace) -> int:
    from ..journal import Journal
    from .perfetto import export_perfetto

    if not Path(args.db).is_file():
        raise AlarmkitError(f"no journal file {args.db}; write one with `alarmkit run ... --db {args.db}`")
    journal = Journal(args.db)
    try:
        out = export_perfetto(journal, [args.run_id], args.out or f"run-{args.run_id}.perfetto.json")
    finally:
        journal.close()
    print(f"wrote {out} ({out.stat().st_size / 1e3:.1f} kB); open it at https://ui.perfetto.dev (Open trace file)")
    return 0


def _ms(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole milliseconds, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected milliseconds >= 0, got {v}")
    return v


def register(sub) -> None:
    imp = sub.add_parser("import", help="import Tail Worker, Logpush or streaming tail events as one run")
    imp.add_argument("file", help="JSON Lines or a JSON array of TraceItems, workers_trace_events or tail stream events")
    imp.add_argument("--db", required=True, help="journal file (DuckDB) to add the run to")
    imp.add_argument("--late-ms", type=_ms, default=None, help="a first run later than this is a late fire (default 1000)")
    imp.add_argument("--grace-ms", type=_ms, default=None,
                     help="an arm with no alarm() by its time plus this is an anomaly (default 60000)")
    imp.add_argument("--json", action="store_true", help="print one JSON object")
    imp.set_defaults(fn=cmd_import)

    rec = sub.add_parser("record", help="run your Durable Object class on local workerd under a driving script, journaled")
    rec.add_argument("--worker", required=True, help="your ES module file, e.g. src/worker.js")
    rec.add_argument("--class", dest="class_name", required=True, help="the Durable Object class it exports")
    rec.add_argument("--script", required=True, help='driving script (JSON): {"steps": [...], "until_ms": N}')
    rec.add_argument("--db", required=True, help="journal file (DuckDB) to add the run to")
    rec.add_argument("--out", default=None, help="folder to keep the raw tail.jsonl / stream.jsonl in")
    rec.add_argument("--json", action="store_true", help="print one JSON object")
    rec.set_defaults(fn=cmd_record)


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from ..journal import Journal
    from .importer import GRACE_MS, LATE_MS, import_file

    if not Path(args.file).is_file():
        raise AlarmkitError(f"no trace file {args.file}; pass a JSON Lines or JSON array file of tail or Logpush events")
    journal = Journal(args.db)
    try:
        result = import_file(args.file, journal, late_ms=LATE_MS if args.late_ms is None else args.late_ms,
                             grace_ms=GRACE_MS if args.grace_ms is None else args.grace_ms)
    finally:
        journal.close()
    print(json.dumps(result.to_dict(), default=str) if args.json else result.report())
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    import json

    from ..journal import Journal
    from .record import load_script, record

    script = load_script(args.script)  # refused before workerd starts
    journal = Journal(args.db)
    try:
        result = record(args.worker, args.class_name, script, journal, out_dir=args.out)
    finally:
        journal.close()
    report = result.check()
    if args.json:
        print(json.dumps({**result.imported.to_dict(), "check": {**report.summary(), "violations_list": [v.to_dict() for v in report.violations]}},
                         default=str))
    else:
        print(result.imported.report())
        print(f"  check: {report!r}")
        for v in report.violations:
            print(f"    {v.to_dict()}")
        print(f"  raw events: {result.tail_path}, {result.stream_path}")
    return 0
