"""The committed reference calibration: one run recorded on real workerd, shipped inside the package
(``alarmkit/calibrate/data/``, found through ``importlib.resources``, so an installed wheel has it).

``reference()`` loads it (no Node, no workerd needed) as a :class:`Calibration` whose journal holds
the real runs (profile ``workerd-real@VERSION``) and the simulated runs of that day;
``recheck(reference())`` compares today's simulator with the recorded observations.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional

import duckdb

from .._files import atomic_output
from ..errors import AlarmkitError
from ..journal import Journal, check_duckdb_file
from .calibration import Calibration, load_tables, save
from .workerd import DEFAULT_VERSION

__all__ = ["DATA_DIR", "is_calibration", "reference", "reference_path", "write_reference", "fidelity_path", "fidelity_reference",
           "sql_path", "sql_reference"]

BLOCK_SIZE = 16_384


def data_dir() -> Path:
    """The package's data folder (``alarmkit/calibrate/data``), wherever alarmkit is installed."""
    # DuckDB opens files by path, so the package must be installed as files (not zipped)
    return Path(str(resources.files("alarmkit.calibrate") / "data"))


DATA_DIR = data_dir()


def reference_path(version: str = DEFAULT_VERSION) -> Path:
    """``calibration-workerd-VERSION.duckdb`` in the package's data folder."""
    return data_dir() / f"calibration-workerd-{version}.duckdb"


def reference(path: Optional[str | Path] = None) -> Calibration:
    """Load a recorded calibration (default: the committed one) into memory; the file is only read."""
    p = Path(path) if path is not None else reference_path()
    if not p.is_file():
        raise AlarmkitError(f"no calibration file {p}; record one with `alarmkit calibrate --long --db {p}` "
                            "(needs workerd) or pass the path of one")
    try:
        check_duckdb_file(p)  # a SQLite or JSON file never reaches DuckDB (it would fetch an extension)
    except AlarmkitError as err:
        raise AlarmkitError(f"{err} (a calibration reference is a DuckDB file written by `alarmkit calibrate "
                            "--record-reference`)") from None
    try:
        con = duckdb.connect(str(p), read_only=True)
    except duckdb.Error as err:
        raise AlarmkitError(f"cannot read calibration file {p}: {err}") from None
    try:
        cal = load_tables(con)
        runs = con.execute("SELECT * FROM runs ORDER BY run_id").df()
        events = con.execute("SELECT * FROM events ORDER BY run_id, seq").df()
    except (duckdb.Error, KeyError, TypeError, AttributeError, ValueError) as err:  # tables of another shape
        raise AlarmkitError(f"{p} is not a calibration journal ({type(err).__name__}: {str(err)[:200]}); write one "
                            "with `alarmkit calibrate --db`") from None
    finally:
        con.close()
    journal = Journal()
    journal.con.register("runs_df", runs)
    journal.con.register("events_df", events)
    journal.con.execute("INSERT INTO runs BY NAME SELECT * FROM runs_df")  # older files lack later columns
    journal.con.execute("INSERT INTO events SELECT * FROM events_df")
    journal.con.unregister("runs_df")
    journal.con.unregister("events_df")
    cal.journal = journal
    if path is None:  # the committed run, with the fidelity probes recorded beside it (their real runs journaled too)
        from .catalogue import PROBES
        from .importer import import_result

        for name, result in {**fidelity_reference(), **sql_reference()}.items():
            if name not in cal.observed:
                cal.observed[name] = result
                cal.real_runs[name] = import_result(journal, name, result, cal.version, dict(PROBES[name].kwargs))
    return cal


def fidelity_path(version: str = DEFAULT_VERSION) -> Path:
    """``fidelity-workerd-VERSION.json``: the fidelity probes' results on real workerd (``fid_probes.py``),
    recorded after the reference run and kept beside it as plain JSON."""
    return data_dir() / f"fidelity-workerd-{version}.json"


def fidelity_reference(version: str = DEFAULT_VERSION) -> dict[str, dict]:
    """The recorded fidelity probe results by probe name ({} when there is no such file)."""
    p = fidelity_path(version)
    if not p.is_file():
        return {}
    return json.loads(p.read_text())["results"]


def sql_path(version: str = DEFAULT_VERSION) -> Path:
    """``sql-workerd-VERSION.json``: the SQL probes' results on real workerd (``sql_probes.py``), kept as plain
    JSON beside the fidelity probes' (a file of their own: each set is recorded on its own day)."""
    return data_dir() / f"sql-workerd-{version}.json"


def sql_reference(version: str = DEFAULT_VERSION) -> dict[str, dict]:
    """The recorded SQL probe results by probe name ({} when there is no such file)."""
    p = sql_path(version)
    if not p.is_file():
        return {}
    return json.loads(p.read_text())["results"]


def write_reference(cal: Calibration, path: Optional[str | Path] = None) -> Path:
    """Write ``cal`` (runs, events, results) as a compact DuckDB file; returns its path."""
    if cal.journal is None:
        raise AlarmkitError("this calibration has no journal to write")
    out = Path(path) if path is not None else reference_path(cal.version)
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / out.name
        j = Journal(staged)
        for table in ("runs", "events"):
            df = cal.journal.con.execute(f"SELECT * FROM {table}").df()  # noqa: F841 - read by name below
            j.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM df")
        save(cal, j)
        j.close()
        # DuckDB's default 256 KB blocks would make this ~100 KB of data a 2 MB file
        if path is None:
            out.parent.mkdir(parents=True, exist_ok=True)  # the package's own data folder
        with atomic_output(out, ours=is_calibration, flag="--record-reference", what="calibration",
                           as_path=True) as small:
            con = duckdb.connect()
            try:
                con.execute(f"ATTACH '{_sql_str(staged)}' AS src (READ_ONLY)")
                con.execute(f"ATTACH '{_sql_str(small)}' AS dst (BLOCK_SIZE {BLOCK_SIZE})")
                con.execute("COPY FROM DATABASE src TO dst")
                con.execute("DETACH dst")
            finally:
                con.close()
    return out


def is_calibration(path: Path) -> bool:
    """A DuckDB file holding a recorded calibration (its ``calibration_meta`` table): replaceable."""
    try:
        check_duckdb_file(path)
        con = duckdb.connect(str(path), read_only=True)
    except (duckdb.Error, AlarmkitError):
        return False
    try:
        return bool(con.execute("SELECT count(*) FROM information_schema.tables "
                                "WHERE table_name = 'calibration_meta'").fetchone()[0])
    finally:
        con.close()


def _sql_str(p: Path) -> str:
    return str(p).replace("'", "''")
