"""The main job: run every built-in scenario into one journal, then write one HTML report each."""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from .journal import Journal
from .scenarios import list_scenarios, run_scenario

__all__ = ["run_demo"]


def run_demo(db: str = "journal.duckdb", out: str = "reports", seed: int = 1) -> list[dict]:
    """Run each scenario with ``seed``; returns one summary per run. Replaces ``db`` if it exists."""
    path = Path(db)
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    results = []
    with Journal(path) as journal:
        for sc in tqdm(list_scenarios(), desc="scenarios", unit="run"):
            r = run_scenario(sc.name, seed=seed, journal=journal)
            r.pop("sim", None)
            results.append(r)
    print(f"wrote {sum(r['events'] for r in results)} events from {len(results)} runs to {path}")
    return results
