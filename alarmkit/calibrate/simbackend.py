"""``SimWorkerd``: the simulator behind the same interface as a running ``workerd`` twin.

The probes (``lab_probes.py``, ``behaviour_probes.py``) drive a backend through ``grant``, ``lab``, ``state``, ``events``,
``probe``, ``get``, ``stop``/``start``/``restart``/``redeploy`` and the clock methods ``sleep``, ``monotonic``,
``time`` and ``new_name``. Here every request is an RPC into a simulated object (waking it, as
a real request does) and every wait advances the virtual clock, so a probe that takes minutes
on workerd takes milliseconds. Virtual ``Date.now()`` starts at :data:`EPOCH_MS`, a realistic
epoch time, so ``setAlarm(now - 5000)`` means what it means on workerd.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ..runtime import Simulation
from ..runtime.profiles import PROFILES
from .fidtwin import TwinFid, TwinFidDeploy, TwinFidNoAlarm
from .simtwin import TwinLedger, TwinProbe, err_info
from .sqltwin import TwinSqlProbe
from .workerd import WorkerdError

__all__ = ["EPOCH_MS", "LOCAL_WORKERD", "SimWorkerd"]

EPOCH_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z
# Local workerd, where it differs from the production-minded "workerd" profile. Observed on
# workerd 2026-11-17: an idle object is evicted after ~10 s (scenario_wake_evicted: constructs at
# -2 ms and at the alarm, 15 s later).
LOCAL_WORKERD: dict[str, Any] = {"idle_evict_ms": PROFILES["workerd-local"].idle_evict_ms}
# global-scope.c++, logWarningOnce when a due alarm finds no alarm() handler
NO_HANDLER_WARNING = ("Attempted to run a scheduled alarm without a handler, did you remember to export an "
                      "alarm() function?\n")


def _num(v: Any) -> Any:
    """worker.js probeParams: a numeric query value is a number."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return int(f) if f.is_integer() else f


class SimWorkerd:
    """The twin's routes served by a :class:`~alarmkit.Simulation` (``profile`` plus ``LOCAL_WORKERD``)."""

    def __init__(self, seed: int = 0, journal: Any = None, scenario: str = "calibrate", params: Optional[dict] = None,
                 profile: str = "workerd", **overrides: Any) -> None:
        changes = {**LOCAL_WORKERD, **overrides}
        self.sim = Simulation(profile=profile, seed=seed, journal=journal, scenario=scenario,
                              params={**(params or {}), "profile_overrides": changes}, **changes)
        self.sim.env.facet_inside = []  # worker.js FACET_INSIDE
        self.sim.advance(EPOCH_MS)
        self.ledgers = self.sim.namespace("LEDGER", TwinLedger)
        self.probes = self.sim.namespace("PROBE", TwinProbe)
        self.sim.env.fid_log, self.sim.env.ctor_fails = [], {}  # worker.js FID_LOG and CTOR_FAILS
        self.fids = {"fid": self.sim.namespace("FID", TwinFid), "noalarm": self.sim.namespace("FIDNOALARM", TwinFidNoAlarm),
                     "deploy": self.sim.namespace("FIDDEPLOY", TwinFidDeploy)}
        self.sqlprobes = self.sim.namespace("SQLPROBE", TwinSqlProbe)
        self.deploy = "v1"  # the twin's code (WorkerdProcess.deploy): redeploy() changes FIDDEPLOY's class
        self._deploying: Optional[str] = None
        self.down = False
        self._lag_ms = 0  # time spent stopped: the kernel jumps it at start()
        self._names: dict[str, int] = {}
        self.compat_date = "simulated"
        self.compat_flags: tuple[str, ...] = ()

    # ---- clock and names ----------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        return self.sim.now + self._lag_ms

    def sleep(self, seconds: float) -> None:
        ms = max(0, int(round(seconds * 1000)))
        if self.down:
            self._lag_ms += ms
        else:
            self.sim.advance(ms)

    def monotonic(self) -> float:
        return self.now_ms / 1000.0

    def time(self) -> float:
        return self.now_ms / 1000.0

    def new_name(self, prefix: str) -> str:
        """Deterministic: ``prefix-0000000001``, the same shape as the real twin's uuid names."""
        n = self._names[prefix] = self._names.get(prefix, 0) + 1
        return f"{prefix}-{n:010d}"

    # ---- lifecycle ----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return not self.down

    def start(self) -> "SimWorkerd":
        """Come back after ``stop()``: the runtime was down for the time slept since."""
        if self.down:
            down, self._lag_ms, self.down = self._lag_ms, 0, False
            self.sim.restart(down)  # at the time it stopped; back ``down`` ms later
            if hasattr(self.sim.env, "fid_log"):  # worker.js's module memory (FID_LOG, CTOR_FAILS): a new isolate
                self.sim.env.fid_log, self.sim.env.ctor_fails, self.sim.env.facet_inside = [], {}, []
            if self._deploying is not None:  # journaled beside its restart, as celld's deploys are
                self.sim.journal_event("deploy", detail={"version": self._deploying})
                self._deploying = None
            self.sim.advance(down)
        return self

    def stop(self) -> None:
        self.down = True

    def restart(self, downtime: float = 0.0) -> "SimWorkerd":
        self.stop()
        self.sleep(downtime)
        return self.start()

    def redeploy(self, deploy: str, downtime: float = 0.0) -> "SimWorkerd":
        """``WorkerdProcess.redeploy``: restart onto another version of the twin's code. "v2" is the deploy
        whose ``FidDeploy`` has no ``alarm()``: the namespace keeps its name and storage, its class changes."""
        classes = {"v1": TwinFidDeploy, "v2": TwinFidNoAlarm}
        if deploy not in classes:
            raise WorkerdError(f"unknown twin deploy {deploy!r}; deploys: {sorted(classes)}")
        self.stop()
        self.sleep(downtime)
        self.fids["deploy"].cls = classes[deploy]  # new instances are of the new class; none is alive while down
        self.deploy = self._deploying = deploy
        return self.start()

    def close(self) -> None:
        self.sim.close()

    def __enter__(self) -> "SimWorkerd":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version(self) -> str:
        return f"alarmkit simulator, profile {self.sim.profile.name}"

    # ---- requests -----------------------------------------------------------------------
    def _stub(self, obj: str, cls: Optional[str] = None):
        cls = cls or ("probe" if obj.startswith("probe") else "ledger")
        return (self.probes if cls == "probe" else self.ledgers).get(obj)

    def _call(self, path: str, aw_fn) -> Any:
        if self.down:
            raise WorkerdError(f"simulated workerd is stopped: no answer for {path}")
        try:
            return self.sim.call(aw_fn())
        except Exception as e:  # noqa: BLE001 - worker.js answers 500 with errInfo
            return {"error": err_info(e), "path": path}

    def get(self, path: str, params: Optional[Mapping[str, Any]] = None, timeout: float = 15.0) -> Any:
        p = dict(params or {})
        obj = p.pop("obj", None) or "default"
        if path == "/health":
            if self.down:
                raise WorkerdError("simulated workerd is stopped")
            return {"ok": True, "now": self.sim.now}
        if path == "/events":
            return {"obj": obj, "now": self.sim.now, "events": self.events(obj, p.get("cls"))}
        if path == "/grant":
            return self.grant(obj, p.get("id", "lease"), int(p.get("ttl", 1000)))
        if path == "/lab":
            return self._call(path, lambda: self._stub(obj, "ledger").lab(p))
        if path == "/state":
            return self.state(obj)
        if path == "/drop_alarm":
            return self._call(path, lambda: self._stub(obj, "ledger").drop_alarm())
        if path == "/gate":
            stub = self._stub(obj, "probe")
            out = self._call(path, lambda: self.sim.gather(stub.bump("a"), stub.bump("b")))
            return out if isinstance(out, dict) else {"results": out, "now": self.sim.now}
        if path.startswith("/probe/"):
            return self.probe(path[len("/probe/"):], obj, **p)
        if path == "/fid/log":
            want = (params or {}).get("obj")
            return {"now": self.sim.now, "rows": [r for r in self.sim.env.fid_log if not want or r["obj"] == want]}
        if path.startswith("/fid/"):
            cls = p.pop("cls", None)
            stub = self.fids[cls if cls in ("noalarm", "deploy") else "fid"].get(obj)
            if self.down:
                raise WorkerdError(f"simulated workerd is stopped: no answer for {path}")
            try:
                return self.sim.call(stub.op(path[len("/fid/"):], {k: _num(v) for k, v in p.items()}))
            except Exception as e:  # noqa: BLE001 - worker.js answers {thrown: errInfo}
                return {"thrown": err_info(e), "now": self.sim.now}
        if path.startswith("/sql/"):
            if self.down:
                raise WorkerdError(f"simulated workerd is stopped: no answer for {path}")
            try:
                return self.sim.call(self.sqlprobes.get(obj).op(path[len("/sql/"):], {k: _num(v) for k, v in p.items()}))
            except Exception as e:  # noqa: BLE001 - worker.js answers {thrown: errInfo}
                return {"thrown": err_info(e), "now": self.sim.now}
        return {"error": "not found", "path": path}

    def log_tail(self, n: int = 4000) -> str:
        """What workerd would have logged: a ``=== start`` line at each start (as ``WorkerdProcess`` writes)
        and the warning of a due alarm with no handler (once per class, again after a restart)."""
        ev = self.sim.events()
        ev = ev[(ev["kind"] == "restart") | ((ev["kind"] == "handler_error")
                                            & ev["detail"].fillna("").str.contains('"warning"'))]
        out, starts = "\n=== start 1\n", 1
        for kind in ev["kind"]:
            if kind == "restart":
                starts += 1
                out += f"\n=== start {starts}\n"
            else:
                out += NO_HANDLER_WARNING
        return out[-n:]

    def events(self, obj: str, cls: Optional[str] = None) -> list[dict]:
        r = self._call("/events", lambda: self._stub(obj, cls).events())
        if isinstance(r, dict):
            raise WorkerdError(f"/events failed for {obj}: {r}")
        return r

    def grant(self, obj: str, lease_id: str, ttl_ms: int) -> dict:
        return self._call("/grant", lambda: self._stub(obj, "ledger").grant(lease_id, int(ttl_ms)))

    def lab(self, obj: str, revoke_throws: Optional[int] = None, always_throw: Optional[bool] = None,
            noboot: Optional[bool] = None) -> dict:
        opts = {k: v for k, v in (("revokeThrows", revoke_throws), ("alwaysThrow", always_throw),
                                  ("noboot", noboot)) if v is not None}
        return self._call("/lab", lambda: self._stub(obj, "ledger").lab(opts))

    def state(self, obj: str) -> dict:
        return self._call("/state", lambda: self._stub(obj, "ledger").state())

    def probe(self, op: str, obj: str, **params: Any) -> Any:
        return self._call(f"/probe/{op}", lambda: self._stub(obj, "probe").op(op, params))
