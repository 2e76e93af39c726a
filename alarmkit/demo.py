"""The main job: run every built-in scenario into one journal, then write one HTML report each."""

from __future__ import annotations

import re
from pathlib import Path

from tqdm.auto import tqdm

from .journal import Journal
from .report import export_folder
from .scenarios import list_scenarios, run_scenario

__all__ = ["run_demo"]


def _file_name(scenario: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", scenario).strip("._") or "scenario"


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
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        names = {f"{_file_name(r['scenario'])}.html": r["run_id"] for r in results}  # one plotly.min.js beside them
        for r, page in zip(results, export_folder(journal, names, folder, lambda xs: tqdm(xs, desc="reports", unit="file"))):
            r["report_html"] = str(page)
        # counted in the file: a comparing scenario journals a second run beside its own
        events, runs = journal.sql("SELECT count(*) AS e, count(DISTINCT run_id) AS r FROM events").iloc[0]
    print(f"wrote {events} events from {runs} runs of {len(results)} scenarios to {path}")
    print(f"wrote {len(results)} HTML reports to {folder}/ (open them in a browser; they work offline)")
    return results
