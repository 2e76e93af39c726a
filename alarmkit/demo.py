"""The main job: run every built-in scenario into one journal, then write one HTML report each."""

from __future__ import annotations

import re
from pathlib import Path

from tqdm.auto import tqdm

from ._paths import output_folder
from .errors import AlarmkitError
from .journal import Journal
from .viz.report import check_plotly_js, export_folder, is_report
from .scenarios import list_scenarios, run_scenario

__all__ = ["run_demo"]


def _file_name(scenario: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", scenario).strip("._") or "scenario"


def run_demo(db: str = "journal.duckdb", out: str = "reports", seed: int = 1, fresh: bool = False) -> list[dict]:
    """Run each scenario with ``seed`` into the journal ``db``; write ``out/<scenario>.html`` for each.

    An existing journal keeps its runs and gets new ones appended (``fresh=True`` empties its runs
    and events first). A file that is not an alarmkit journal, or one another process holds, is
    refused before anything runs (``AlarmkitError``, ``JournalLocked``). In ``out`` only reports
    alarmkit wrote are replaced; nothing is deleted. Returns one summary per run.
    """
    scenarios = list_scenarios()
    folder = output_folder(out, "--out", create=False)  # checked before any work; made below
    targets = {sc.name: folder / f"{_file_name(sc.name)}.html" for sc in scenarios}
    for target in targets.values():
        if target.exists() and not (target.is_file() and is_report(target)):
            raise AlarmkitError(f"{str(target)!r} exists and is not an alarmkit report; the demo replaces only "
                                "reports it wrote: move it away or pass another --out folder")
    check_plotly_js(folder)  # a plotly.min.js of the user's is refused now, before any run is journaled
    path = Path(db)
    existed = path.exists()
    results = []
    with Journal(path) as journal:  # refuses a non-journal, a folder, a held file; changes nothing then
        dropped = journal.clear() if fresh else 0
        before = int(journal.sql("SELECT count(*) AS n FROM runs").iloc[0]["n"])
        first = int(journal.sql("SELECT coalesce(max(run_id), 0) + 1 AS n FROM runs").iloc[0]["n"])
        output_folder(folder, "--out")
        verdicts = {}  # each report says first what its run's checks found (the journal keeps no obligations)
        for sc in tqdm(scenarios, desc="scenarios", unit="run"):
            run = run_scenario(sc.name, seed=seed, journal=journal)
            verdicts[targets[sc.name].name] = run.verdict
            results.append(run.to_dict())  # plain data: no live sim
        names = {targets[r["scenario"]].name: r["run_id"] for r in results}  # one plotly.min.js beside them
        for r, page in zip(results, export_folder(journal, names, folder, lambda xs: tqdm(xs, desc="reports", unit="file"),
                                                  verdicts)):
            r["report_html"] = str(page)
        # counted in the file: a comparing scenario journals a second run beside its own
        events, runs, last = journal.sql(
            "SELECT count(*) AS e, count(DISTINCT run_id) AS r, max(run_id) AS m FROM events WHERE run_id >= ?",
            first).iloc[0]
    span = f"runs {first}-{int(last)}"
    if not existed:
        print(f"wrote {events} events from {runs} runs ({span}) of {len(results)} scenarios to a new journal {path}")
    elif fresh:
        print(f"emptied {path} as --fresh asked ({dropped} earlier runs dropped), then wrote {events} events "
              f"from {runs} runs ({span}) of {len(results)} scenarios")
    else:
        print(f"appended {events} events from {runs} runs ({span}) of {len(results)} scenarios to {path}, "
              f"which held {before} runs before (--fresh empties it first)")
    print(f"wrote {len(results)} HTML reports to {folder}/ (open them in a browser; they work offline, loading the plotly.min.js beside them)")
    return results
