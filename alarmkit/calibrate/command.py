"""``alarmkit calibrate``: the command behind the CLI entry (``alarmkit/cli.py`` adds the parser).

Exit codes: 0 every probe matches (or ``--install-only`` finished, or had nothing to work with);
1 some probe differs; 2 a usage problem (no workerd, a bad path), as for every alarmkit command.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..errors import AlarmkitError
from .workerd import DEFAULT_VERSION, WorkerdError, find_workerd, install_workerd, installed_version

__all__ = ["add_arguments", "run_command", "install_only"]

NO_NODE = ("alarmkit calibrate: Node.js and npm are not on PATH, so workerd cannot be installed from npm. "
           "The calibration against real workerd is skipped; everything else in alarmkit works without it, and "
           "`alarmkit calibrate --reference` compares the simulator with the committed real-workerd run. "
           "To calibrate for real: install Node.js 18+ (it brings npm), then `alarmkit calibrate --install-only`.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--long", action="store_true", help="also run the retry-exhaustion and revival probes (~3 min)")
    p.add_argument("--db", default=None, help="journal file (DuckDB) for the real and simulated runs; default in memory")
    from .._aliases import add

    add(p, "--report", "--out", dest="out", default=None, metavar="FILE", help="HTML report to write, e.g. calibration.html")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--install-only", action="store_true",
                   help=f"install workerd@{DEFAULT_VERSION} from npm into the cache, then exit (0 without Node too)")
    p.add_argument("--reference", nargs="?", const="", default=None, metavar="FILE",
                   help="no workerd needed: compare today's simulator with a recorded run (default: the committed one)")
    p.add_argument("--record-reference", nargs="?", const="", default=None, metavar="FILE",
                   help="also write the run as a compact reference file (default: alarmkit/calibrate/data/calibration-workerd-VERSION.duckdb)")
    p.add_argument("--probe", dest="names", action="append", default=None, metavar="NAME",
                   help="run only this probe (repeatable); default: every quick probe (and the long ones with --long)")
    p.add_argument("--parallel", type=int, default=4, help="probes run at once on the shared workerd; default 4")
    p.add_argument("--js-host", action="store_true",
                   help="simulate with the twin's own worker.js under alarmkit's JavaScript host (Node) instead of its Python twin")


def install_only() -> int:
    """Install workerd from npm unless the pinned version is there; 0 also when Node/npm are missing."""
    have = find_workerd()
    if have and installed_version(have) == DEFAULT_VERSION:
        print(f"alarmkit calibrate: workerd {DEFAULT_VERSION} is installed: {have}")
        return 0
    if not shutil.which("node") or not shutil.which("npm"):
        print(NO_NODE)
        return 0
    print(f"alarmkit calibrate: installing workerd@{DEFAULT_VERSION} from npm (about 100 MB, once)", flush=True)
    try:
        binary = install_workerd()
    except WorkerdError as err:
        print(f"alarmkit calibrate: {err}", file=sys.stderr)
        return 1
    print(f"alarmkit calibrate: workerd {DEFAULT_VERSION} installed: {binary}")
    return 0


def _is_calibration(path: Path) -> bool:
    from .recorded import is_calibration

    return is_calibration(path)


def _check_journal(db: str) -> None:
    """Refuse a --db that is not a journal (or is held) before minutes of probes, not after."""
    from .._paths import output_file
    from ..journal import Journal

    if Path(db).exists() or db == "":
        Journal(db).close()  # refuses a folder, a non-journal, a held file; an existing journal is kept
    else:
        output_file(db, "--db")


def _recheck_js(recorded):
    from ..workers.js.fidelity import recheck_js

    return recheck_js(recorded)


def run_command(args: argparse.Namespace) -> int:
    from .._paths import output_file
    from ..viz.report import is_report
    from .calibration import calibrate, probe_names, recheck
    from .recorded import reference, write_reference
    from .render import text_table, write_html

    if args.install_only:
        return install_only()
    if args.parallel < 1:
        raise AlarmkitError(f"--parallel must be at least 1, got {args.parallel}")
    if args.out is not None:  # checked before minutes of probes, not after
        from .._aliases import flag

        output_file(args.out, flag(args, "out", "--report"), replaceable=is_report, what="report")
    if args.names:
        probe_names(args.long, args.names)  # an unknown --probe is a usage error (exit 2), with or without workerd
    if args.record_reference:
        output_file(args.record_reference, "--record-reference", replaceable=_is_calibration, what="calibration")
    if args.db is not None and args.reference is not None:  # it was ignored without a word
        raise AlarmkitError(f"--db {args.db!r} does nothing with --reference: the reference run is read from its file "
                            "and nothing is journaled; drop --db, or drop --reference to calibrate against workerd "
                            "and journal both runs")
    if args.db is not None:
        _check_journal(args.db)
    if args.js_host:
        from ..workers.js import ensure

        ensure()  # Node 18+ and esbuild, or one JsHostError (exit 2) before any probe

    def say(msg: str) -> None:
        print(f"[calibrate] {msg}", file=sys.stderr, flush=True)

    if args.reference is not None:
        recorded = reference(args.reference or None)
        if args.names:  # compare only the probes asked for; each must be in the recording
            missing = [n for n in args.names if n not in recorded.observed]
            if missing:
                raise AlarmkitError(f"probe(s) {missing} are not in the recorded run {args.reference or 'committed'}; "
                                    f"it holds {list(recorded.observed)}")
            recorded.observed = {n: r for n, r in recorded.observed.items() if n in args.names}
        side = "worker.js under the JavaScript host" if args.js_host else "today's simulator"
        say(f"comparing {side} with the run recorded on {recorded.workerd} at {recorded.created_at}")
        try:
            cal = _recheck_js(recorded) if args.js_host else recheck(recorded)
        except (KeyError, TypeError, AttributeError, ValueError) as err:  # a recording of another shape
            raise AlarmkitError(f"the recorded run {args.reference or 'committed'} does not read as a calibration "
                                f"({type(err).__name__}: {str(err)[:200]}); record one with `alarmkit calibrate "
                                "--record-reference FILE` (needs workerd)") from None
    else:
        if find_workerd() is None and not (shutil.which("node") and shutil.which("npm")):
            raise WorkerdError("workerd is not installed, and Node.js/npm are not on PATH to install it. "
                               "`alarmkit calibrate --reference` compares the simulator with the committed "
                               "real-workerd run instead (no Node needed); to calibrate for real, install "
                               "Node.js 18+ and run `alarmkit calibrate --install-only`")
        cal = calibrate(long=args.long, db=args.db, names=args.names, parallel=args.parallel, say=say)
        if args.record_reference is not None:
            say(f"wrote the reference run {write_reference(cal, args.record_reference or None)}")
        if args.js_host:
            say("simulating the same probes with worker.js under the JavaScript host")
            cal = _recheck_js(cal)
    if args.out:
        say(f"wrote {write_html(cal, args.out)}")
    if args.json:
        print(json.dumps(cal.to_dict(), default=str))
    else:
        print(text_table(cal))
    return 0 if cal.match else 1
