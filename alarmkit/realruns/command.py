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
