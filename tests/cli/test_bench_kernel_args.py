"""bench_kernel.py refuses bad arguments with one line and exit 2, before any valgrind run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, fragment", [
    (["--timers", "0"], "need --timers in 1..1,000,000 and 0 < F1 < F2, got --timers 0 --fires 50000 150000"),
    (["--fires", "5", "5"], "got --timers 2000 --fires 5 5"),
    (["--fires", "0", "10"], "--fires 0 10"),
    (["--timers", "x"], "invalid int value: 'x'"),
])
def test_bench_kernel_refuses_bad_arguments(tmp_path, args, fragment):
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_kernel.py"), *args], capture_output=True,
                       text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    assert "Traceback" not in p.stderr and fragment in p.stderr.strip().splitlines()[-1], p.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
