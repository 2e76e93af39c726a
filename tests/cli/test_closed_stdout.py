"""A reader that stops reading is not an error (`alarmkit import ... | head -1`
exited 2 with "Broken pipe" in 4 of 8 tries, after a complete import). What it did not read is
dropped quietly and the command ends with its own exit code; its work (the journal) is done."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.realruns import fixture

ENV = {**os.environ, "PYTHONPATH": str(Path(ak.__file__).resolve().parents[1])}


def _closed_reader(argv, cwd):
    """Run the CLI with its stdout a pipe whose reader has already gone (every write fails: EPIPE)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "alarmkit", *argv], stdout=w, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env=ENV, timeout=300)
    finally:
        os.close(w)


@pytest.mark.parametrize("argv", [
    ["import", str(fixture("lease-exhaustion")), "--db", "j.duckdb"],
    ["run", "lease-ledger", "--db", "j.duckdb"],
    ["list"],
])
def test_a_reader_that_stopped_reading_is_not_an_error(tmp_path, argv):
    proc = _closed_reader(argv, tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    if "--db" in argv:
        with ak.Journal(tmp_path / "j.duckdb", read_only=True) as j:
            assert list(j.runs()["complete"]) == [True]


def test_a_usage_error_with_no_reader_still_exits_2_on_stderr(tmp_path):
    proc = _closed_reader(["import", "missing.jsonl", "--db", "j.duckdb"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("alarmkit: error:") and "Broken pipe" not in proc.stderr


def test_head_of_an_import_exits_0_every_time(tmp_path):
    for i in range(4):
        pipe = subprocess.Popen([sys.executable, "-m", "alarmkit", "import", str(fixture("lease-exhaustion")), "--db",
                                 f"j{i}.duckdb"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=ENV)
        first = pipe.stdout.readline()
        pipe.stdout.close()  # as `head -1` does
        err = pipe.stderr.read()
        assert pipe.wait(timeout=300) == 0 and err == b"" and first.startswith(b"imported tail.jsonl")
