"""A journal path that is the user's symlink to an empty file, or to one a kill -9 left cut short (0, 4,096
or 8,192 bytes): the file it names is made again, through it, and the symlink is kept (it was deleted and a
regular file put in its place: a file alarmkit did not write, gone, and the journal not where it pointed).
Two processes opening the same empty file at once: one journal, each a journal or a one-line refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import alarmkit as ak
from alarmkit import Journal

ENV = {**os.environ, "PYTHONPATH": str(Path(ak.__file__).resolve().parents[1])}


def _cut_short_at(path: Path, size: int) -> None:
    if size:
        duckdb.connect(str(path)).close()
        os.truncate(path, size)
    else:
        path.write_bytes(b"")


@pytest.mark.parametrize("relative", [False, True])
@pytest.mark.parametrize("size", [0, 4096, 8192])
def test_a_symlink_to_a_file_cut_short_is_kept_and_the_journal_made_where_it_points(tmp_path, size, relative):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.duckdb"
    _cut_short_at(target, size)
    link = tmp_path / "j.duckdb"
    link.symlink_to(os.path.relpath(target, tmp_path) if relative else target)
    with Journal(link) as j:
        j.start_run("s", "p", 0, {})
    assert link.is_symlink() and os.readlink(link) == (os.path.relpath(target, tmp_path) if relative else str(target))
    with Journal(target, read_only=True) as j:
        assert list(j.runs()["run_id"]) == [1]


_OPEN = r'''
import sys
from alarmkit import Journal
from alarmkit.errors import AlarmkitError
try:
    with Journal(sys.argv[1]) as j:
        j.start_run("s", "p", int(sys.argv[2]), {})
    print("ok")
except AlarmkitError as err:
    print("refused", str(err).count("\n"))
'''


@pytest.mark.parametrize("round_", range(3))
def test_two_processes_opening_one_empty_file_make_one_journal(tmp_path, round_):
    path = tmp_path / "j.duckdb"
    path.write_bytes(b"")
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN, str(path), str(i)], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    said = sorted(o.strip() for o, _ in outs)
    assert all(p.returncode == 0 for p in procs) and all("Traceback" not in e for _, e in outs), outs
    assert said in (["ok", "ok"], ["ok", "refused 0"]), outs
    with Journal(path, read_only=True) as j:
        assert len(j.runs()) == said.count("ok")
