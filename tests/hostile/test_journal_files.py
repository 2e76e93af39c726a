"""Files handed to ``--db`` and ``calibrate --reference`` that are not what they claim: a FIFO, a
write-ahead log with no journal, a journal cut short, a SQLite file, a reference of another shape.
Each is one line and exit 2, and the file is left as it was."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

import duckdb
import pytest

from alarmkit.cli import main


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_fifo_is_refused_without_reading_it(tmp_path, capsys):
    fifo = tmp_path / "j.duckdb"
    os.mkfifo(fifo)
    code, err = run(capsys, ["run", "lease-normal", "--db", str(fifo)])  # reading it would block for ever
    assert code == 2 and err.endswith("is not a regular file (a pipe, a device or a socket), so not an alarmkit "
                                      "journal; pass a file path, e.g. --db journal.duckdb\n")


def test_a_wal_beside_a_new_journal_is_left_alone(tmp_path, capsys):
    wal = tmp_path / "fresh.duckdb.wal"
    wal.write_text("my notes\n")
    code, err = run(capsys, ["run", "lease-normal", "--db", str(tmp_path / "fresh.duckdb")])
    assert code == 2 and "fresh.duckdb.wal' lies beside the new journal" in err
    assert wal.read_text() == "my notes\n" and not (tmp_path / "fresh.duckdb").exists()


def test_a_journal_cut_short_is_one_line(tmp_path, capsys):
    good = tmp_path / "good.duckdb"
    for _ in range(2):
        assert run(capsys, ["run", "lease-normal", "--db", str(good)])[0] == 0
    cut = tmp_path / "cut.duckdb"
    shutil.copy(good, cut)
    os.truncate(cut, good.stat().st_size * 2 // 3)
    for argv in (["run", "lease-normal", "--db", str(cut)], ["export", "--db", str(cut), "--run", "1"]):
        code, err = run(capsys, argv)
        assert code == 2, err
        assert err.startswith(f"alarmkit: error: {argv[0]}: DuckDB could not read or write the journal (")
        assert "the file may be truncated or damaged: pass another --db path" in err


def test_a_sqlite_file_as_a_calibration_reference_never_reaches_duckdb(tmp_path, capsys):
    ref = tmp_path / "ref.sqlite"
    con = sqlite3.connect(ref)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = ref.read_bytes()
    code, err = run(capsys, ["calibrate", "--reference", str(ref)])
    assert code == 2 and "is not an alarmkit journal (not a DuckDB file: a SQLite database)" in err
    assert "(a calibration reference is a DuckDB file written by `alarmkit calibrate --record-reference`)" in err
    assert ref.read_bytes() == before


def test_a_reference_of_another_shape_is_one_line(tmp_path, capsys):
    from alarmkit.calibrate.recorded import reference_path

    ref = tmp_path / "ref.duckdb"
    shutil.copy(reference_path(), ref)
    con = duckdb.connect(str(ref))
    con.execute("DELETE FROM calibration_meta WHERE key = 'bands'")
    con.close()
    code, err = run(capsys, ["calibrate", "--reference", str(ref)])
    assert code == 2 and err.endswith("is not a calibration journal (KeyError: 'bands'); write one with "
                                      "`alarmkit calibrate --db`\n")


def test_a_foreign_file_named_as_an_existing_journals_wal_is_left_alone(tmp_path, capsys):
    journal = tmp_path / "k.duckdb"
    assert run(capsys, ["run", "lease-normal", "--db", str(journal)])[0] == 0
    wal = tmp_path / "k.duckdb.wal"
    wal.write_text("my notes, not a WAL\n")  # DuckDB deleted it and the run went on
    for argv in (["run", "lease-normal", "--db", str(journal)], ["export", "--db", str(journal), "--run", "1"]):
        code, err = run(capsys, argv)
        assert code == 2 and "k.duckdb.wal' lies beside the journal" in err and "is not a DuckDB write-ahead log" in err
        assert wal.read_text() == "my notes, not a WAL\n"


def test_a_journals_own_wal_after_a_kill_is_replayed(tmp_path, capsys):
    journal = tmp_path / "k.duckdb"
    assert run(capsys, ["run", "lease-normal", "--db", str(journal)])[0] == 0
    script = (f"import duckdb, os; c = duckdb.connect({str(journal)!r}); c.execute(\"SET checkpoint_threshold='1GB'\"); "
              "c.execute(\"UPDATE runs SET scenario = 'after-kill'\"); os._exit(0)")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert (tmp_path / "k.duckdb.wal").stat().st_size > 0
    assert run(capsys, ["run", "lease-normal", "--db", str(journal)])[0] == 0
    assert duckdb.connect(str(journal), read_only=True).execute("SELECT scenario FROM runs ORDER BY run_id").fetchall() == [
        ("after-kill",), ("lease-normal",)]
