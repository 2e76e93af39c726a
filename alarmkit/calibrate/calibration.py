"""Run every probe on real workerd and in the simulator, and judge them (``alarmkit calibrate``).

``calibrate()`` runs the real probes (in parallel where the twin allows: one shared workerd for
the ordinary probes, a workerd of its own for each probe that restarts it, and one for the long
exhaustion/revival chain), runs the same probes on :class:`SimWorkerd`, writes both into one
journal (real runs as profile ``workerd-real@VERSION``, imported by ``importer.py``), and judges
each probe with ``checks.py``: a ``Calibration`` (the results, their journal runs, the verdicts),
stored beside the journal by ``save`` and read back by ``load_tables``. ``recheck()`` does the
simulator half again against recorded observations, so a machine without Node still compares the
simulator with reality. Tables and figures of a calibration are in ``render.py``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from ..journal import Journal
from . import catalogue as P
from .checks import Bands, Verdict, compare_results
from .importer import REAL_PROFILE_PREFIX, import_result
from .runner import run_probe, run_probes
from .simbackend import SimWorkerd
from .workerd import DEFAULT_COMPAT_DATE, WorkerdError, WorkerdProcess, find_workerd, installed_version, workerd_version

__all__ = ["Calibration", "calibrate", "recheck", "run_real", "run_sim", "probe_names", "save", "load_tables", "SIM_SEED"]

SIM_SEED = 0
_RESULTS_DDL = """
CREATE TABLE IF NOT EXISTS calibration_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS calibration_results (probe TEXT, side TEXT, run_id INTEGER, result TEXT);
"""


@dataclass
class Calibration:
    """Real and simulated results of each probe, their journal runs, and the verdicts."""

    version: str
    workerd: str
    compat_date: str
    long: bool
    created_at: str
    bands: Bands = field(default_factory=Bands)
    observed: dict[str, dict] = field(default_factory=dict)
    simulated: dict[str, dict] = field(default_factory=dict)
    real_runs: dict[str, int] = field(default_factory=dict)
    sim_runs: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    journal: Optional[Journal] = None

    @property
    def profile(self) -> str:
        """The journal profile of the real runs, e.g. ``workerd-real@1.20261117.1``."""
        return f"{REAL_PROFILE_PREFIX}{self.version}"

    @property
    def match(self) -> bool:
        return bool(self.verdicts) and all(v.match for v in self.verdicts.values())

    @property
    def probes(self) -> list[str]:
        return list(self.verdicts)

    def judge(self) -> "Calibration":
        self.verdicts = {n: compare_results(n, self.observed[n], self.simulated.get(n, {"not_run": "no simulated result"}),
                                            self.bands) for n in self.observed}
        return self

    def to_dict(self) -> dict:
        return {"workerd": self.workerd, "version": self.version, "profile": self.profile,
                "compat_date": self.compat_date, "long": self.long, "created_at": self.created_at,
                "bands": {"latency_ms": self.bands.latency_ms, "cold_ms": self.bands.cold_ms,
                          "profile": self.bands.profile},
                "match": self.match,
                "probes": {n: {**v.to_dict(), "real_run": self.real_runs.get(n), "sim_run": self.sim_runs.get(n),
                               "long": P.PROBES[n].long if n in P.PROBES else None}
                           for n, v in self.verdicts.items()}}


def save(cal: Calibration, journal: Journal) -> None:
    """Store what ``load`` needs in ``journal``'s database (tables calibration_meta and calibration_results)."""
    con = journal.con
    con.execute(_RESULTS_DDL)
    meta = {"version": cal.version, "workerd": cal.workerd, "compat_date": cal.compat_date, "long": cal.long,
            "created_at": cal.created_at, "bands": {"latency_ms": cal.bands.latency_ms, "cold_ms": cal.bands.cold_ms,
                                                    "profile": cal.bands.profile}}
    for k, v in meta.items():
        con.execute("INSERT OR REPLACE INTO calibration_meta VALUES (?, ?)", [k, json.dumps(v)])
    con.execute("DELETE FROM calibration_results")
    for side, res, runs in (("real", cal.observed, cal.real_runs), ("sim", cal.simulated, cal.sim_runs)):
        for n, r in res.items():
            con.execute("INSERT INTO calibration_results VALUES (?, ?, ?, ?)",
                        [n, side, runs.get(n), json.dumps(r, default=str)])


def load_tables(con: Any) -> Calibration:
    """A ``Calibration`` from a database holding ``save``'s tables (verdicts recomputed)."""
    meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM calibration_meta").fetchall()}
    cal = Calibration(version=meta["version"], workerd=meta["workerd"], compat_date=meta["compat_date"],
                      long=meta["long"], created_at=meta["created_at"], bands=Bands(**meta["bands"]))
    for probe, side, run_id, text in con.execute(
            "SELECT probe, side, run_id, result FROM calibration_results ORDER BY rowid").fetchall():
        res, runs = (cal.observed, cal.real_runs) if side == "real" else (cal.simulated, cal.sim_runs)
        res[probe] = json.loads(text)
        if run_id is not None:
            runs[probe] = int(run_id)
    return cal.judge()




def probe_names(long: bool = False, names: Optional[list[str]] = None) -> list[str]:
    """The probes to run: ``names`` (checked), else every quick one, plus the long ones if ``long``."""
    if names:
        bad = [n for n in names if n not in P.PROBES]
        if bad:
            raise WorkerdError(f"unknown probe(s) {bad}; probes: {list(P.PROBES)}")
        return list(names)
    return P.QUICK + (P.LONG if long else [])


# ---------------------------------------------------------------------------------------------
# the two halves
# ---------------------------------------------------------------------------------------------

def _failed(names: list[str], err: BaseException) -> dict[str, dict]:
    return {n: {"probe": n, "name": n, "error": f"{type(err).__name__}: {err}"} for n in names}


def run_real(names: list[str], binary: Optional[str] = None, parallel: int = 4,
             say: Callable[[str], None] = lambda m: None) -> dict[str, dict]:
    """Run ``names`` on real workerd; every workerd started here is stopped here (by its PID)."""
    binary = binary or find_workerd()
    if not binary:
        raise WorkerdError("workerd is not installed: run `alarmkit calibrate --install-only` (needs Node.js and npm)")
    long_chain = [n for n in names if P.PROBES[n].long]
    # a probe that restarts workerd, or needs another compatibility date, gets a workerd of its own
    alone = [n for n in names if (P.PROBES[n].restarts or P.PROBES[n].compat_date) and not P.PROBES[n].long]
    shared = [n for n in names if n not in long_chain and n not in alone]

    def group(members: list[str], include_long: bool = False, inner: int = 1,
              compat_date: Optional[str] = None) -> dict[str, dict]:
        try:
            with WorkerdProcess(binary, compat_date=compat_date or DEFAULT_COMPAT_DATE) as wd:
                out = run_probes(wd, members, include_long=include_long, parallel=inner)
        except WorkerdError as e:
            return _failed(members, e)
        say(f"real workerd: {', '.join(members)} done")
        return out

    results: dict[str, dict] = {}
    with ThreadPoolExecutor(max_workers=1 + max(1, len(alone))) as ex:
        chain = ex.submit(group, long_chain, True) if long_chain else None
        if shared:
            results.update(group(shared, False, parallel))
        # workerd's start-up is a burst of CPU: starting the restarting probes' workerds while the
        # shared probes measure lateness made fires ~100 ms late on 2 cores, so they come after
        for j in [ex.submit(group, [n], False, 1, P.PROBES[n].compat_date) for n in alone]:
            results.update(j.result())
        if chain is not None:
            results.update(chain.result())
    return {n: results[n] for n in names}


def run_sim(names: list[str], journal: Optional[Journal] = None, seed: int = SIM_SEED
            ) -> tuple[dict[str, dict], dict[str, int]]:
    """Run ``names`` on the simulator, one ``Simulation`` (one journal run) per probe."""
    results, runs = {}, {}
    for n in names:
        spec = P.PROBES[n]
        wd = SimWorkerd(seed=seed, journal=journal, scenario=f"calibrate:{n}", params=dict(spec.kwargs), **spec.sim)
        try:
            results[n] = run_probe(wd, n)
        finally:
            wd.close()
        if wd.sim.run_id is not None:
            runs[n] = wd.sim.run_id
    return results, runs


# ---------------------------------------------------------------------------------------------

def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def calibrate(long: bool = False, db: Optional[str] = None, names: Optional[list[str]] = None,
              parallel: int = 4, bands: Bands = Bands(), binary: Optional[str] = None,
              say: Callable[[str], None] = lambda m: None) -> Calibration:
    """Run the probes on real workerd and in the simulator; journal both; judge each probe.

    ``db``: a DuckDB journal file to write (replaced if it holds an earlier calibration's tables;
    other runs in it stay); default in memory. Raises ``WorkerdError`` when workerd is missing.
    """
    binary = binary or find_workerd()
    if not binary:
        raise WorkerdError("workerd is not installed: run `alarmkit calibrate --install-only` (needs Node.js and "
                           "npm), or `alarmkit calibrate --reference` to check the simulator against the committed "
                           "real run")
    selected = probe_names(long, names)
    text = workerd_version(binary)
    version = installed_version(binary) or text.split()[-1]
    say(f"running {len(selected)} probes on {text} (npm workerd@{version}) and in the simulator")
    observed = run_real(selected, binary, parallel, say)
    journal = Journal(db) if db else Journal()
    cal = Calibration(version=version, workerd=text, compat_date=DEFAULT_COMPAT_DATE, long=long,
                      created_at=_now(), bands=bands, observed=observed, journal=journal)
    for n, r in observed.items():
        if "error" not in r:
            cal.real_runs[n] = import_result(journal, n, r, version, dict(P.PROBES[n].kwargs))
    cal.simulated, cal.sim_runs = run_sim(selected, journal)
    save(cal, journal)
    return cal.judge()


def recheck(recorded: Calibration, bands: Optional[Bands] = None, seed: int = SIM_SEED) -> Calibration:
    """The recorded real results against a fresh simulator run of the same probes (no workerd needed)."""
    journal = Journal()
    cal = Calibration(version=recorded.version, workerd=recorded.workerd, compat_date=recorded.compat_date,
                      long=recorded.long, created_at=_now(), bands=bands or recorded.bands,
                      observed=dict(recorded.observed), journal=journal)
    for n, r in cal.observed.items():
        if "error" not in r:
            cal.real_runs[n] = import_result(journal, n, r, cal.version, dict(P.PROBES[n].kwargs))
    cal.simulated, cal.sim_runs = run_sim(list(cal.observed), journal, seed)
    return cal.judge()
