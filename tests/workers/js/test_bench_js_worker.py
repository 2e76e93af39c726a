"""benchmarks/bench_js_worker.py refuses bad arguments (exit 2, one line naming the range) and, at a
tiny size, measures both peers: every lifecycle ran on each side, one round trip per lifecycle."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def bench(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_js_worker.py"), *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.parametrize("args, fragment", [
    (["--objects", "0"], "expected a number in 1..20,000, got 0"),
    (["--objects", "25000"], "expected a number in 1..20,000, got 25000"),
    (["--rearms", "x"], "expected a number in 1..10,000, got x"),
    (["--repeat", "21"], "expected a number in 1..20, got 21"),
    (["--objects", "20000", "--rearms", "10000"], "200,000,000 lifecycles a run, past 2,000,000"),
])
def test_refuses_bad_arguments(tmp_path, args, fragment):
    p = bench(*args, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert fragment in p.stderr.strip().splitlines()[-1]


def test_tiny_run_counts_both_peers(js_host, tmp_path):
    p = bench("--objects", "5", "--rearms", "4", "--repeat", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "lifecycles          python 20   js 20" in p.stdout
    assert re.search(r"round trips\s+1\.00 per lifecycle", p.stdout)
    assert re.search(r"ratio js/python\s+\d+\.\d\d", p.stdout)
    assert list(tmp_path.iterdir()) == []                                   # it writes nothing


def test_a_bad_host_setting_is_one_line_exit_2(js_host, tmp_path, monkeypatch):
    monkeypatch.setenv("ALARMKIT_JSHOST_SPIN_US", "nan")
    p = bench("--objects", "2", "--rearms", "2", "--repeat", "1", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("bench_js_worker: ALARMKIT_JSHOST_SPIN_US must be microseconds")
