"""Import memory: the peak RSS of ``alarmkit import`` of a generated tail trace (default 50 MB).

    python benchmarks/bench_import_memory.py            # 50 MB
    python benchmarks/bench_import_memory.py --mb 10    # a quick one

The trace is ``data/real-runs/lease-exhaustion/tail.jsonl`` (a failing alarm's seven runs and their
log lines) repeated for as many objects as fill the size, each copy with its own object name and
id. The import runs in a child process; its peak RSS is printed beside the peak of a child that only
imports alarmkit, DuckDB and pandas (the floor any import starts from), and both as multiples of the
file's size. It measured 430 MB for 50 MB on this trace before the invocations took slots,
their log lines shared their keys and names, the records were freed before journaling and the rows
went in chunks; 340 MB after (docs/real-runs.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def trace(path: Path, mb: int) -> int:
    src = (ROOT / "data/real-runs/lease-exhaustion/tail.jsonl").read_text().splitlines()
    size, k = 0, 0
    with open(path, "w") as out:
        while size < mb * 1_000_000:
            for line in src:
                s = line.replace("ledger-exhaust", f"ledger-{k}").replace(
                    "2587f64a9135f43e33df29de2ae96df5561462bbf2a2ed0d86c41604cb1f2b33", f"{k:064x}")
                out.write(s + "\n")
                size += len(s) + 1
            k += 1
    return size


def peak(argv: list[str]) -> float:
    """The peak RSS (MB) of one child running ``argv``."""
    script = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", script, *argv], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=50, help="trace size in MB (1..500); default 50")
    args = ap.parse_args()
    if not 1 <= args.mb <= 500:
        ap.error(f"--mb is 1..500, got {args.mb}")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "big.jsonl"
        size = trace(f, args.mb) / 1e6
        floor = peak([sys.executable, "-c", "import alarmkit, alarmkit.realruns, duckdb, pandas"])
        top = peak([sys.executable, "-m", "alarmkit", "import", str(f), "--db", str(Path(tmp) / "j.duckdb")])
    print(f"trace {size:.0f} MB: import peak {top:.0f} MB ({top / size:.1f}x the file), floor {floor:.0f} MB; "
          f"above the floor {top - floor:.0f} MB ({(top - floor) / size:.1f}x)")


if __name__ == "__main__":
    main()
