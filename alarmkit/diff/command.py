"""``alarmkit diff``: two runs of one journal (``--db J --run 3 --run 4``) or of two (``--db A --db B``),
the summary printed and, with ``--out``, an HTML report (the figure and the table of differences).
Exit codes: 0 the diff was made (whether or not the runs differ), 2 a usage problem."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError

__all__ = ["add_arguments", "run_command", "report_page"]

MAX_RUN_ID = 2**31 - 1  # the journal's run_id column is a 32-bit INTEGER
TABLE_ROWS = 500  # the report's table shows this many differing events (the figure draws them all)


def _run(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"run ids are integers, got {text!r}; "
                                         "`alarmkit diff --db J --run 1 --run 2`") from None
    if not 1 <= value <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"run ids are 1..{MAX_RUN_ID}, got {value}; journal.runs() lists them")
    return value


def _align(text: str) -> str | int:
    if text in ("exact", "clock_start", "first_request"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--align is exact, clock_start, first_request or a tolerance in ms, "
                                         f"got {text!r}") from None
    if not 0 <= value <= 86_400_000:
        raise argparse.ArgumentTypeError(f"--align as a tolerance is 0..86400000 ms, got {value}")
    return value


def _ms(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tolerance-ms is a whole number of ms, got {text!r}") from None
    if not 0 <= value <= 86_400_000:
        raise argparse.ArgumentTypeError(f"--tolerance-ms is 0..86400000, got {value}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", action="append", required=True, metavar="FILE",
                   help="journal file; once (both runs in it) or twice (run A in the first, run B in the second)")
    p.add_argument("--run", dest="runs", action="append", type=_run, default=None, metavar="ID",
                   help="run id; twice (A then B); once with two --db (the same id in each); "
                        "omitted with two --db when each holds one run")
    p.add_argument("--align", type=_align, default="exact",
                   help="exact (default: times as journaled), clock_start (each run from its clock's start), "
                        "first_request (each run from its first call), or a tolerance in ms; the summary names it")
    p.add_argument("--tolerance-ms", type=_ms, default=None,
                   help="with --align clock_start or first_request: the tolerance")
    from .._aliases import add

    add(p, "--report", "--out", dest="out", default=None, metavar="FILE", help="HTML report to write, e.g. diff.html")


# Control and bidirectional characters a journal's object ids may hold, shown as \\uXXXX on a terminal.
_CONTROL = re.compile("[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _terminal(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _only_run(journal: Any, path: str) -> int:
    ids = list(journal.runs()["run_id"])
    if len(ids) != 1:
        raise AlarmkitError(f"{path} holds {len(ids)} runs; name them: --run A_ID --run B_ID")
    return int(ids[0])


def report_page(d: Any, title: str) -> str:
    """The diff's HTML page (alarmkit.report's page: offline, every string escaped)."""
    import pandas as pd
    import plotly.graph_objects as go

    from ..viz.plots import esc, fmt_ms
    from ..viz.report import report_html

    t = d.table().head(TABLE_ROWS)

    def col(name: str) -> list[str]:
        return [esc("" if pd.isna(v) else (fmt_ms(int(v)) if name.startswith(("t_", "scheduled_", "late_")) else v), 80)
                for v in t[name].astype(object)]

    cols = ["object", "kind", "status", "what", "t_a", "t_b", "scheduled_a", "scheduled_b", "late_a", "late_b"]
    header = [esc(c.replace("_a", f" ({d.names[0]})").replace("_b", f" ({d.names[1]})")) for c in cols]
    table = go.Figure(go.Table(header={"values": header}, cells={"values": [col(c) for c in cols]}))
    more = f" (the first {TABLE_ROWS} of {len(d.differences)})" if len(d.differences) > TABLE_ROWS else ""
    table.update_layout(title=esc(f"differing events{more}"), height=min(900, 220 + 40 * max(len(t), 1)))
    rows = [("summary", d.summary(), not d.same),
            ("events", f"{d.names[0]}: {d.events[0]:,}; {d.names[1]}: {d.events[1]:,}", False)]
    return report_html([d.figure(), table], title, rows)


def run_command(args: argparse.Namespace) -> int:
    from .._files import write_text
    from ..journal import Journal
    from ..viz.report import is_report
    from . import diff

    dbs, runs = args.db, args.runs or []
    if len(dbs) > 2:
        raise AlarmkitError(f"--db given {_times(len(dbs))}; give it once (both runs) or twice (A, then B)")
    if len(runs) > 2 or (len(dbs) == 1 and len(runs) != 2):
        raise AlarmkitError(f"--run given {_times(len(runs))}; with one --db give two: --run A_ID --run B_ID")
    for db in dbs:
        if not Path(db).is_file():
            raise AlarmkitError(f"no journal file {db!r}; write one with `alarmkit run ... --db FILE`")
    if args.out is not None:  # refuse a bad --out before reading anything
        from .._files import check_output

        check_output(args.out, ours=is_report, what="report", reading=tuple(dbs))
    journals = [Journal(db, read_only=True) for db in dict.fromkeys(dbs)]
    try:
        ja, jb = journals[0], journals[-1]
        if len(dbs) == 2 and not runs:
            runs = [_only_run(ja, dbs[0]), _only_run(jb, dbs[1])]
        elif len(runs) == 1:
            runs = runs * 2
        names = [f"run {r}" + (f" of {Path(db).name}" if len(dbs) == 2 else "") for r, db in zip(runs, dbs * 2)]
        if names[0] == names[1]:  # one run against itself (or one file given twice)
            names = [f"A ({names[0]})", f"B ({names[1]})"]
        d = diff((ja, runs[0]), (jb, runs[1]), args.align, tolerance_ms=args.tolerance_ms, names=tuple(names))
    finally:
        for j in journals:
            j.close()
    print(_terminal(d.summary()))
    if args.out is not None:
        out = write_text(args.out, report_page(d, f"diff · {d.names[0]} vs {d.names[1]}"), ours=is_report,
                         what="report", reading=tuple(dbs))
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
