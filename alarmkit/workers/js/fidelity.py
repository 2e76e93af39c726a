"""The fidelity check: the calibration's JavaScript twin (``alarmkit/calibrate/twin/worker.js``, the
same module real workerd runs in ``alarmkit calibrate``) under the JavaScript host, probed by the same
probes, judged against the committed real-workerd reference with the calibration's checks and bands.

``JsHostWorkerd`` is a calibration backend (the interface ``WorkerdProcess`` and ``SimWorkerd``
share) whose every request goes to the twin's own ``fetch`` handler in Node, under a virtual clock.
``recheck_js()`` is ``calibrate.recheck`` with that backend in place of the Python twin.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any, Mapping, Optional

from ...runtime import Simulation
from ...calibrate import catalogue as P
from ...calibrate.calibration import SIM_SEED, Calibration, _now
from ...calibrate.importer import import_result
from ...calibrate.recorded import reference
from ...calibrate.runner import run_probe
from ...calibrate.simbackend import EPOCH_MS, LOCAL_WORKERD, SimWorkerd
from ...calibrate.workerd import WorkerdError, WorkerdProcess
from ...journal import Journal
from . import load

__all__ = ["TWIN", "NOT_RUN", "JsHostWorkerd", "recheck_js"]

TWIN = Path(__file__).resolve().parents[2] / "calibrate" / "twin" / "worker.js"

# probes the JavaScript host cannot run honestly, and why: each is reported as not run (its verdict's
# not_run says why; the table says "not run", never an error), never run and judged on a half-built
# answer. Empty: the host runs every probe of the calibration, facet included (ctx.facets).
NOT_RUN: dict[str, str] = {}


class JsHostWorkerd(SimWorkerd):
    """The twin worker.js under the JavaScript host, behind the calibration backends' interface."""

    def __init__(self, seed: int = 0, journal: Any = None, scenario: str = "calibrate-js", params: Optional[dict] = None,
                 profile: str = "workerd", **overrides: Any) -> None:
        changes = {**LOCAL_WORKERD, **overrides}
        compat = changes.pop("compatibility_date", None)
        self.sim = Simulation(profile=profile, seed=seed, journal=journal, scenario=scenario,
                              params={**(params or {}), "profile_overrides": changes, "host": "js"}, **changes)
        self.worker = load(self.sim, TWIN, {"LEDGER": "LeaseLedger", "PROBE": "Probe", "FID": "Fid", "FIDNOALARM": "FidNoAlarm",
                                            "FIDDEPLOY": "FidDeploy", "SQLPROBE": "SqlProbe", "R3": "R3"}, compat)
        deploy_ns = self.sim.namespaces["FIDDEPLOY"]
        # the twin's deploys (WorkerdProcess.redeploy): "v2" is deploy-v2.js, whose FidDeploy is FidNoAlarm
        self.deploys = {"v1": deploy_ns.cls, "v2": self.sim._js_bridge.bind_class(
            "FIDDEPLOY", "FidNoAlarm", self.worker.methods("FIDNOALARM") or [])}
        self.deploy = "v1"
        self._deploying: Optional[str] = None
        self.sim.advance(EPOCH_MS)
        self.down = False
        self._lag_ms = 0
        self._names: dict[str, int] = {}
        self.compat_date = "simulated"
        self.compat_flags: tuple[str, ...] = ()

    def version(self) -> str:
        return f"alarmkit JavaScript host, profile {self.sim.profile.name}"

    def redeploy(self, deploy: str, downtime: float = 0.0) -> "JsHostWorkerd":
        """``WorkerdProcess.redeploy``: the FIDDEPLOY namespace's instances are built from another exported
        class of the same module from now on (Node keeps the module: its memory outlives the restart)."""
        if deploy not in self.deploys:
            raise WorkerdError(f"unknown twin deploy {deploy!r}; deploys: {sorted(self.deploys)}")
        self.stop()
        self.sleep(downtime)
        self.sim.namespaces["FIDDEPLOY"].cls = self.deploys[deploy]
        self.deploy = self._deploying = deploy
        return self.start()

    def get(self, path: str, params: Optional[Mapping[str, Any]] = None, timeout: float = 15.0) -> Any:
        if self.down:
            raise WorkerdError(f"the JavaScript host's workerd is stopped: no answer for {path}")
        q = {k: v for k, v in (params or {}).items() if v is not None}
        url = f"http://twin{path}" + ("?" + urllib.parse.urlencode(q) if q else "")
        try:
            res = self.worker.fetch(url)
        except Exception as e:  # noqa: BLE001 - as the real twin answers a failed request
            return {"error": {"text": str(e), "name": type(e).__name__, "message": str(e)}, "path": path}
        return json.loads(res.text())

    # the requests, built exactly as for real workerd (its URL parameters)
    events = WorkerdProcess.events
    grant = WorkerdProcess.grant
    lab = WorkerdProcess.lab
    state = WorkerdProcess.state
    probe = WorkerdProcess.probe


def recheck_js(recorded: Optional[Calibration] = None, names: Optional[list[str]] = None,
               seed: int = SIM_SEED, skip: Optional[Mapping[str, str]] = None) -> Calibration:
    """The recorded real-workerd results (default: the committed reference) against the twin worker.js
    run under the JavaScript host; a ``Calibration`` whose verdicts say which probes match. A probe in
    ``NOT_RUN`` (or in ``skip``, probe -> reason) is not run: its verdict does not match, and its
    ``not_run`` says ``simulator: <reason>``."""
    recorded = recorded or reference()
    journal = Journal()
    chosen = [n for n in (names or list(recorded.observed)) if n in recorded.observed]
    cal = Calibration(version=recorded.version, workerd=recorded.workerd, compat_date=recorded.compat_date,
                      long=recorded.long, created_at=_now(), bands=recorded.bands,
                      observed={n: recorded.observed[n] for n in chosen}, journal=journal)
    for n in chosen:
        r = cal.observed[n]
        if "error" not in r:
            cal.real_runs[n] = import_result(journal, n, r, cal.version, dict(P.PROBES[n].kwargs))
        spec = P.PROBES[n]
        reason = {**NOT_RUN, **(skip or {})}.get(n)
        if reason is not None:
            cal.simulated[n] = {"probe": n, "not_run": reason}
            continue
        try:
            wd = JsHostWorkerd(seed=seed, journal=journal, scenario=f"calibrate-js:{n}", params=dict(spec.kwargs), **spec.sim)
        except Exception as e:  # noqa: BLE001 - one probe's set-up failure is that probe's result
            cal.simulated[n] = {"probe": n, "error": f"{type(e).__name__}: {e}"}
            continue
        try:
            cal.simulated[n] = run_probe(wd, n)
        finally:
            wd.close()
        if wd.sim.run_id is not None:
            cal.sim_runs[n] = wd.sim.run_id
    return cal.judge()
