"""Run every probe on real workerd and in the simulator, and compare (``alarmkit calibrate``).

``calibrate()`` runs the real probes (in parallel where the twin allows: one shared workerd for
the ordinary probes, a workerd of its own for each probe that restarts it, and one for the long
exhaustion/revival chain), runs the same probes on :class:`SimWorkerd`, writes both into one
journal (real runs as profile ``workerd-real@VERSION``, imported by ``importer.py``), and judges
each probe with ``checks.py``. ``recheck()`` does the simulator half again against recorded
observations, so a machine without Node still compares the simulator with reality.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Callable, Optional

from ..journal import Journal
from . import probes as P
from .calibration import Calibration, save
from .checks import Bands
from .importer import import_result
from .simbackend import SimWorkerd
from .workerd import DEFAULT_COMPAT_DATE, WorkerdError, WorkerdProcess, find_workerd, installed_version, workerd_version

__all__ = ["Calibration", "calibrate", "recheck", "run_real", "run_sim", "probe_names", "SIM_SEED"]

SIM_SEED = 0


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
    alone = [n for n in names if P.PROBES[n].restarts and not P.PROBES[n].long]
    shared = [n for n in names if n not in long_chain and n not in alone]

    def group(members: list[str], include_long: bool = False, inner: int = 1) -> dict[str, dict]:
        try:
            with WorkerdProcess(binary) as wd:
                out = P.run_probes(wd, members, include_long=include_long, parallel=inner)
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
        for j in [ex.submit(group, [n]) for n in alone]:
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
        wd = SimWorkerd(seed=seed, journal=journal, scenario=f"calibrate:{n}", params=dict(spec.kwargs))
        try:
            results[n] = P.run_probe(wd, n)
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
