"""The benchmark scripts refuse bad arguments with one line and exit 2, before any work, and never
write over a file they did not write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def refused(p: subprocess.CompletedProcess, fragment: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    assert "Traceback" not in p.stderr and fragment in p.stderr.strip().splitlines()[-1], p.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--sizes", "0"], "expected a number in 1,000..10,000,000, got 0"),
    (["--sizes", "-5"], "got -5"),
    (["--repeat", "0"], "expected a number in 1..100, got 0"),
    (["--zoom", "all"], "--zoom goes with --pair"),
    (["--pair", "nope.html", "x.html"], "--pair: nope.html is not a file"),
])
def test_bench_export_refuses_bad_arguments(tmp_path, args, fragment):
    refused(script("bench_export.py", *args, cwd=tmp_path), fragment)


def test_bench_export_keep_never_writes_over_a_file(tmp_path):
    (tmp_path / "a-file").write_text("mine")
    refused(script("bench_export.py", "--keep", "a-file", cwd=tmp_path), "--keep a-file is a file")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "report10000.html").write_text("mine")
    refused(script("bench_export.py", "--keep", "kept", "--sizes", "10000", cwd=tmp_path),
            "holds report10000.html already; pass an empty folder")
    assert (tmp_path / "kept" / "report10000.html").read_text() == "mine"


@pytest.mark.parametrize("args, fragment", [
    (["--leases", "-1"], "--leases must be in 1..10,000,000 objects, got -1"),
    (["--repeat", "0"], "--repeat must be at least 1, got 0"),
])
def test_bench_core_refuses_bad_arguments(tmp_path, args, fragment):
    refused(script("bench_core.py", *args, cwd=tmp_path), fragment)


def test_journal_identity_refuses_to_record_over_a_file_and_says_what_is_wrong(tmp_path):
    (tmp_path / "A.duckdb").write_text("someone's")
    refused(script("journal_identity.py", "record", "A.duckdb", cwd=tmp_path), "A.duckdb exists; record into a new file")
    assert (tmp_path / "A.duckdb").read_text() == "someone's"
    refused(script("journal_identity.py", "compare", "missing.duckdb", "A.duckdb", cwd=tmp_path),
            "missing.duckdb is not a file")
    refused(script("journal_identity.py", "compare", "A.duckdb", "A.duckdb", cwd=tmp_path),
            "could not read A.duckdb and A.duckdb as recordings")
    assert script("journal_identity.py", "--help", cwd=tmp_path).returncode == 0
