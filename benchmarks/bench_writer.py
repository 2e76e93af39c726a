"""The DuckDB journal writer's instructions per awaiting lifecycle, at small and at large batches.

    python benchmarks/bench_writer.py                # small: 100 objects, re-arms 10 vs 40; large: 300 objects, 10 vs 290
    python benchmarks/bench_writer.py --small-only

The lifecycle is bench_instructions.py's (three events each: the arm, the fire, the re-arm's
completion). Each case runs three peers under ``valgrind --tool=cachegrind`` (every thread counted),
twice with R1 and R2 re-arms per object; the difference per extra lifecycle of

- ``none``: no journal (the runtime alone, the baseline subtracted below);
- ``arrow``: batches converted to Arrow on the simulation thread but not inserted;
- ``duckdb``: journaling to a DuckDB file (conversion and insert, the writer thread's too).

``arrow - none`` is the conversion, ``duckdb - arrow`` the insert. *Small* uses batches of 3,072
events, below DuckDB's row group (122,880 rows), as a short run's one append at close is; *large*
uses the journal's default batch (245,760 events, two row groups) with enough lifecycles for one
full batch in the difference (plus the small remainder each run writes at close, so it is an upper
bound of the full-batch cost).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import gc, sys
gc.disable()
sys.path.insert(0, {here!r})
peer, n, r, db, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
from bench_core import Rearm
from alarmkit import Journal, Simulation
Rearm.budget = r
journal = None
if peer == "duckdb":
    journal = Journal(db, batch_size=batch)
elif peer == "arrow":
    from alarmkit.journal._frames import _table

    class ArrowOnly(Journal):
        def write_events(self, run_id, rows):
            _table(run_id, rows, packed=True)

    journal = ArrowOnly(batch_size=batch)
sim = Simulation(seed=1, journal=journal, scenario="bench-writer", idle_evict_ms=10**9)
sim.env.rng = sim.kernel.rng
ns = sim.namespace("R", Rearm)
for i in range(n):
    sim.call(ns.get(f"o{{i}}").start())
sim.run(until=r * 1000 + 10_000)
sim.close()
if journal is not None:
    journal.close()
"""

PEERS = ("none", "arrow", "duckdb")


def per_lifecycle(objects: int, r1: int, r2: int, batch: int, tmp: Path) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    from bench_instructions import valgrind_count  # this folder: the one valgrind run of the benchmarks

    out = {}
    for peer in PEERS:
        runs = [valgrind_count(peer, [CHILD.format(here=str(HERE)), peer, str(objects), str(r),
                                      str(tmp / f"{peer}-{batch}-{r}.duckdb"), str(batch)]) for r in (r1, r2)]
        out[peer] = (runs[1] - runs[0]) / (objects * (r2 - r1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small-only", action="store_true", help="skip the large-batch case (about 10 minutes)")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed; install it (Debian: apt install valgrind)")
    from alarmkit.journal._frames import BATCH_SIZE

    cases = [("small", 100, 10, 40, 3_072)]
    if not a.small_only:
        cases.append(("large", 300, 10, 290, BATCH_SIZE))
    print("DuckDB journal writer, instructions per awaiting lifecycle (3 events), GC off:")
    print(f"  {'case':28} {'runtime':>9} {'conversion':>11} {'insert':>9} {'writer':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, objects, r1, r2, batch in cases:
            p = per_lifecycle(objects, r1, r2, batch, Path(tmp))
            conv, ins = p["arrow"] - p["none"], p["duckdb"] - p["arrow"]
            label = f"{name} ({batch:,}-event batches)"
            print(f"  {label:28} {p['none']:>9,.0f} {conv:>11,.0f} {ins:>9,.0f} {conv + ins:>9,.0f}")


if __name__ == "__main__":
    main()
