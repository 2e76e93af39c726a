"""A calibration's results: the real and simulated result of each probe, their journal runs and
the verdicts (``Calibration``), and how they are stored beside a journal (``save``, ``load_tables``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from ..journal import Journal
from . import probes as P
from .checks import Bands, Verdict, compare_results
from .importer import REAL_PROFILE_PREFIX

__all__ = ["Calibration", "save", "load_tables"]

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
        self.verdicts = {n: compare_results(n, self.observed[n], self.simulated.get(n, {"error": "not simulated"}),
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
