"""The main job: run every built-in scenario into one journal, then write one HTML report each."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from tqdm.auto import tqdm

from ._paths import output_folder
from .errors import AlarmkitError
from .journal import Journal
from .viz.report import check_plotly_js, export_folder, is_report, summary_lines, write_index
from .scenarios import list_scenarios, run_scenario

EXPLORE_SEEDS = (20, 300)  # random plans explore tries on an anti-pattern that held (with every crash point), then more

__all__ = ["run_demo"]


def _file_name(scenario: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", scenario).strip("._") or "scenario"


def run_demo(db: str = "journal.duckdb", out: str = "reports", seed: int = 1, fresh: bool = False) -> list[dict]:
    """Run each scenario with ``seed`` into the journal ``db``; write ``out/<scenario>.html`` for each.

    An existing journal keeps its runs and gets new ones appended (``fresh=True`` empties its runs
    and events first). A file that is not an alarmkit journal, or one another process holds, is
    refused before anything runs (``AlarmkitError``, ``JournalLocked``). In ``out`` only reports
    alarmkit wrote are replaced; nothing is deleted. Returns one summary per run.

    An anti-pattern whose plain run held (its bug shows only under faults) is explored (every crash point and
    20 random plans, then 300 if those found nothing; in-process); the first counterexample is replayed into the journal and
    written as ``out/<scenario>.counterexample.html``, which its page links and names. ``out/index.html``
    lists every page with its verdict, broken first, and the console ends with the same summary.
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
        about: dict[str, dict] = {}
        pages: dict[str, int] = {}
        for sc in tqdm(scenarios, desc="scenarios", unit="run"):
            run = run_scenario(sc.name, seed=seed, journal=journal)
            page = targets[sc.name].name
            verdicts[page], pages[page] = run.verdict, run.run_id
            about[page] = {"demonstrates": sc.demonstrates, "kind": sc.kind}
            results.append(run.to_dict())  # plain data: no live sim
            if sc.kind == "anti-pattern" and run.verdict.status != "broken":
                _counterexample(sc, journal, page, verdicts, about, pages)
        reports = export_folder(journal, pages, folder, lambda xs: tqdm(xs, desc="reports", unit="file"), verdicts, about)
        by_page = dict(zip(pages, reports))
        for r in results:
            r["report_html"] = str(by_page[targets[r["scenario"]].name])
        entries = [{"name": name[:-len(".html")], "file": name, "status": verdicts[name].status,
                    "headline": verdicts[name].headline, "lines": verdicts[name].lines(),
                    "demonstrates": about[name].get("demonstrates", ""), "kind": about[name].get("kind", "")}
                   for name in pages]
        write_index(folder, entries)
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
    print(f"wrote {len(pages)} HTML reports to {folder}/ (open them in a browser; they work offline, loading the plotly.min.js beside them)")
    print("\n".join(summary_lines(entries, str(folder))))
    return results


def _counterexample(sc, journal, page: str, verdicts: dict, about: dict, pages: dict) -> None:
    """Explore an anti-pattern that held; replay the first counterexample into the journal as a page of its
    own, and say it on the plain run's page (a warning naming it, a row with the replay, a link)."""
    from .explore import explore
    from .journal import Finding

    for seeds in EXPLORE_SEEDS:
        found = explore(sc.name, seeds=seeds, workers=1, progress=False)
        if found.counterexamples:
            break
    else:
        verdicts[page] = verdicts[page].with_warnings([Finding(
            "explore found nothing", None, None, f"explore found nothing: {found.runs} runs ({seeds} random "
            "plans and the crash points) broke nothing; try more seeds: `alarmkit explore " + sc.name + " --seeds 2000`")])
        return
    cx = found.counterexamples[0]
    bad = cx.replay(journal)
    cx_page = page[:-len(".html")] + ".counterexample.html"
    where = f" on {cx.object}" if cx.object else ""
    said = (f"explore found it · {cx.invariant}{where} under the fault plan {json.dumps(cx.plan.to_dict())} (seed {cx.seed}, "
            f"shrunk in {cx.shrink_runs} runs): {cx.message} — the run: {cx_page}")
    plain = verdicts[page]  # the found plan replaces the generic "held without faults" warning, said first
    verdicts[page] = replace(plain, warnings=(Finding("explore found a counterexample", cx.object, None, said),)
                             + tuple(w for w in plain.warnings if w.invariant != "anti-pattern held without faults"))
    about[page]["rows"] = [("counterexample (explore)", f"{cx.invariant}{where}: {cx.message}\n\nreplay it:\n{cx.snippet()}",
                            True)]
    about[page]["links"] = [(cx_page, "the counterexample's run")]
    verdicts[cx_page], pages[cx_page] = bad.verdict, bad.run_id
    about[cx_page] = {"demonstrates": f"the counterexample that alarmkit explore {sc.name} finds: {sc.demonstrates}",
                      "kind": sc.kind, "links": [(page, "the run without faults")]}
