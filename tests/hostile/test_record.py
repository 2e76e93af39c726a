"""Hostile inputs to ``alarmkit record``: generated driving scripts and worker files refused before
workerd starts (exit 2, one line, no journal, no work folder); and a recording killed by SIGKILL,
SIGTERM or Ctrl-C leaves no workerd running, no work folder, and the user's files as they were."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tiers import tier_examples  # a tenth of the examples in the quick tier
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_harness import SETTINGS, assert_clean, checksums, run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "alarmkit" / "realruns" / "js" / "lab"
N_SCRIPTS = tier_examples(80)

_val = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.floats(allow_nan=False), st.text(max_size=6),
                 st.just(-1), st.just(10**12), st.lists(st.integers(), max_size=2), st.just({}))
_owes = st.one_of(_val, st.fixed_dictionaries({"effect": st.one_of(st.just("revoke"), _val), "key": _val},
                                              optional={"due": st.one_of(st.just("returned"), _val),
                                                        "after_ms": _val, "extra": _val}))
_step = st.one_of(_val, st.fixed_dictionaries(
    {"object": st.one_of(st.just("a"), _val), "method": st.one_of(st.just("grant"), st.just("no-such"), _val)},
    optional={"at_ms": _val, "args": _val, "owes": _owes}))
_script = st.one_of(_val, st.fixed_dictionaries({"steps": st.one_of(st.lists(_step, max_size=3), _val)},
                                                optional={"until_ms": _val}))


_drive_step = st.one_of(_val, st.fixed_dictionaries(
    {"call": st.one_of(st.just("LEDGER"), _val), "name": st.one_of(st.just("a"), _val),
     "method": st.one_of(st.just("grant"), st.just("no-such"), _val)},
    optional={"at": _val, "after": _val, "args": _val, "owes": _owes, "fetch": _val, "retries": _val}),
    st.fixed_dictionaries({"fetch": _val}, optional={"at": _val}), st.fixed_dictionaries({"restart": _val}))
_drive = st.one_of(_val, st.fixed_dictionaries({"steps": st.one_of(st.lists(_drive_step, max_size=3), _val)},
                                               optional={"until": _val, "expect": _val, "until_ms": _val}))


def test_generated_drives_are_refused_before_workerd(tmp_path_factory, monkeypatch):
    """The drive format (``--drive``, as ``alarmkit worker`` reads it), JSON or TOML: exit 2 with one line
    (a note beside it only for the old format), no journal, no work folder."""
    folder = tmp_path_factory.mktemp("hostile-record-drive")
    work = folder / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    (folder / "bin.js").write_bytes(b"\xff\xfe\x00binary")
    seen = []

    @settings(max_examples=N_SCRIPTS, **SETTINGS)
    @given(drive=_drive, suffix=st.sampled_from([".json", ".toml"]), worker=st.sampled_from(["nope.js", "bin.js"]),
           raw=st.sampled_from([None, b"\xff\xfe{}", b"steps = 3\n", b"[[steps]]\nat = -1\n"]))
    def one(drive, suffix, worker, raw) -> None:
        path = folder / f"d{suffix}"
        path.write_bytes(raw if raw is not None else json.dumps(drive).encode())
        code, out, err = run_cli(["record", "--worker", worker, "--class", "LeaseLedger", "--drive", path.name,
                                  "--db", "j.duckdb"], folder)
        assert_clean(code, out, err)
        assert code == 2 and not (folder / "j.duckdb").exists() and not list(work.iterdir())
        seen.append(err.splitlines()[-1])
        path.unlink()

    one()
    assert len(seen) == N_SCRIPTS


def test_generated_scripts_are_refused_before_workerd(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("hostile-record")
    work = folder / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    (folder / "bin.js").write_bytes(b"\xff\xfe\x00binary")
    answers = {0: 0, 2: 0}

    @settings(max_examples=N_SCRIPTS, **SETTINGS)
    @given(script=_script, raw=st.sampled_from([None, b"\xff\xfe{}", b"{\"steps\": [], \"until_ms\": NaN}", b"[" * 5000]),
           worker=st.sampled_from(["nope.js", "bin.js"]))
    def one(script, raw, worker) -> None:
        (folder / "s.json").write_bytes(raw if raw is not None else json.dumps(script).encode())
        code, out, err = run_cli(["record", "--worker", worker, "--class", "LeaseLedger", "--script", "s.json",
                                  "--db", "j.duckdb"], folder)
        assert_clean(code, out, err)
        answers[code] += 1
        assert code == 2  # nothing here can run: the worker is missing or binary
        assert not (folder / "j.duckdb").exists() and not list(work.iterdir())

    one()
    assert answers[2] == N_SCRIPTS


def _start(tmp_path: Path, until_ms: int = 30_000) -> tuple[subprocess.Popen, Path]:
    (tmp_path / "s.json").write_text(json.dumps({"steps": [{"object": "l", "method": "grant", "args": ["a", 60_000]}],
                                                 "until_ms": until_ms}))
    raw = tmp_path / "raw"
    raw.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "alarmkit", "record", "--worker", str(LAB / "lease.js"), "--class",
                             "LeaseLedger", "--script", "s.json", "--db", "j.duckdb", "--out", "raw"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})
    return proc, tmp


def _workerd_of(proc: subprocess.Popen, timeout: float = 30) -> int:
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "workerd" in c.name() or any("workerd" in a and "serve" not in a for a in c.cmdline()[:1]):
                    if "serve" in c.cmdline():
                        return c.pid
            except psutil.Error:
                pass
        time.sleep(0.1)
    raise AssertionError("workerd did not start")


def _gone(pid: int, folder: Path, timeout: float = 15) -> None:
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        if not alive and not list(folder.glob("alarmkit-record-*")):
            return
        time.sleep(0.1)
    raise AssertionError(f"left behind: workerd alive={psutil.pid_exists(pid)}, {list(folder.iterdir())}")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_killed_recording_leaves_no_workerd_and_no_work_folder(tmp_path, workerd_binary, sig):
    proc, tmp = _start(tmp_path)
    try:
        pid = _workerd_of(proc)
        time.sleep(0.5)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    _gone(pid, tmp)
    assert not list((tmp_path / "raw").iterdir())  # nothing half-written into --out
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert err.strip().startswith("alarmkit: record ") and "workerd was stopped" in err, err
    assert checksums(tmp_path, skip=("j.duckdb", "j.duckdb.wal")) == {"s.json": checksums(tmp_path)["s.json"]}
