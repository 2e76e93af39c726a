"""Instructions per alarm lifecycle, counted by valgrind: a figure the machine's noise cannot move.

    python benchmarks/bench_instructions.py          # 200 objects; about 10 minutes
    python benchmarks/bench_instructions.py --objects 100

Wall-clock ratios on a shared 2-core machine swing by a factor of two between runs (see
bench_core.py). Counted instructions do not: each peer runs under ``valgrind --tool=cachegrind``
twice, with R1 and R2 re-arms per object, and the difference divided by ``objects x (R2 - R1)``
is the cost of one lifecycle with imports and set-up cancelled out. The garbage collector is off
in the child so that when it happens to run does not move the count. With numpy's
BLAS held to one thread (see ``count``) two counts of the same run differ by a few thousand
instructions in two billion, well under one instruction per lifecycle; the default measures 40,000
lifecycles per peer. Instructions are not time
(cache misses are not counted), but a change that removes work shows here exactly.

Peers: SimPy (one timeout of one process, the benchmark-1 peer); alarmkit with no journal (the
runtime alone); alarmkit whose batches are converted to Arrow but not inserted (the simulation
thread's whole share of journaling); alarmkit journaling to a DuckDB file (every thread counted,
the writer's too, although on a 2-core machine the writer runs beside the simulation). At this
size each run's events go to DuckDB in one append smaller than a row group, which costs more per
row than the full batches of a long run, so the last figure is an upper bound.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import gc, sys
gc.disable()
sys.path.insert(0, {here!r})
peer, n, r, db = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from bench_core import Rearm, bench_simpy
if peer == "simpy":
    bench_simpy(n, r)
else:
    from alarmkit import Journal, Simulation
    Rearm.budget = r
    journal = None
    if peer == "alarmkit+journal":
        journal = Journal(db)
    elif peer == "alarmkit+arrow":  # the simulation thread's share of journaling: batches to Arrow, not inserted
        from alarmkit.journal._frames import _table

        class ArrowOnly(Journal):
            def write_events(self, run_id, rows):
                _table(run_id, rows, packed=True)  # what write_events does on this thread

        journal = ArrowOnly()
    sim = Simulation(seed=1, journal=journal, scenario="bench-instructions", idle_evict_ms=10**9)
    sim.env.rng = sim.kernel.rng
    ns = sim.namespace("R", Rearm)
    for i in range(n):
        sim.call(ns.get(f"o{{i}}").start())
    sim.run(until=r * 1000 + 10_000)
    sim.close()
    if journal is not None:
        journal.close()
"""

PEERS = ("simpy", "alarmkit", "alarmkit+arrow", "alarmkit+journal")


def count(peer: str, objects: int, rearms: int, tmp: Path) -> int:
    """Instructions valgrind counted for one child run."""
    db = tmp / f"{peer}-{rearms}.duckdb"
    # no .pyc written: otherwise the first run compiles what the second finds ready, and the
    # difference of the two undercounts by the compile (it read 13.8k instead of 16.7k for SimPy)
    # one BLAS/OpenMP thread: numpy's OpenBLAS threads spin at import, and under valgrind how long they
    # spin varies run to run (the same SimPy run counted 2.10G to 2.21G instructions; with one thread,
    # 2,103,046,078 and 2,103,051,324: a difference of 0.05 instructions per lifecycle at this size)
    return valgrind_count(peer, [CHILD.format(here=str(HERE)), peer, str(objects), str(rearms), str(db)])


def valgrind_count(peer: str, child_args: list[str]) -> int:
    """Instructions valgrind counts for ``python -c *child_args`` with one BLAS thread and no .pyc written
    (the two reasons are above); also used by bench_kernel.py."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           sys.executable, "-c", *child_args], capture_output=True, text=True, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run of {peer} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=200, help="objects (SimPy processes); default 200")
    ap.add_argument("--rearms", type=int, nargs=2, default=(10, 210), metavar=("R1", "R2"),
                    help="the two re-arm counts whose difference is measured; default 10 210")
    ap.add_argument("--peers", nargs="+", choices=PEERS, default=list(PEERS), help="which to count (SimPy always)")
    a = ap.parse_args()
    peers = ["simpy", *(p for p in a.peers if p != "simpy")]
    r1, r2 = a.rearms
    if a.objects < 1 or not 0 < r1 < r2:
        ap.error(f"need --objects >= 1 and 0 < R1 < R2, got --objects {a.objects} --rearms {r1} {r2}")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed; install it (Debian: apt install valgrind) or use bench_core.py")
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency of alarmkit
        def tqdm(it, **_):
            return it
    per: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for peer in tqdm(peers, desc="valgrind runs (2 per peer)", unit="peer"):
            lo, hi = count(peer, a.objects, r1, Path(tmp)), count(peer, a.objects, r2, Path(tmp))
            per[peer] = (hi - lo) / (a.objects * (r2 - r1))
    base = per["simpy"]
    print(f"instructions per lifecycle ({a.objects} objects, re-arms {r1} vs {r2}, GC off):")
    for peer in peers:
        print(f"  {peer:18} {per[peer]:>9,.0f}   {per[peer] / base:5.2f}x SimPy's  (rate ratio {base / per[peer]:.2f}x)")


if __name__ == "__main__":
    main()
