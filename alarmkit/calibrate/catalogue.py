"""Behaviour probes and the lease ledger's lab scenarios, run on a real workerd.

Every probe takes a running backend and returns a plain dict (JSON-serialisable). The backend is a
real :class:`~alarmkit.calibrate.workerd.WorkerdProcess` or its simulated double
:class:`~alarmkit.calibrate.simbackend.SimWorkerd`: probes wait with ``wd.sleep``/``wd.monotonic``/``wd.time``
and name objects with ``wd.new_name``, so the same probe code runs on both clocks. Times are milliseconds relative to the probe's anchor ``t0_ms`` (an
epoch-ms value from workerd's own ``Date.now()``, named in each dict). Event lists are journal rows::

    {"t": int, "kind": str, "scheduled": int|None (relative to t0), "retry_count": int|None,
     "is_retry": 0|1|None, "detail": dict}

Every wait is a bounded poll (``polling.py``). This module is the catalogue: ``PROBES`` maps each
name to its ``ProbeSpec`` (the function in ``lab_probes.py`` or ``behaviour_probes.py``, its
arguments, whether it is long, whether it restarts workerd, the compatibility date its workerd needs,
the settings its simulated side runs under); ``runner.py`` runs a selection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from .behaviour_probes import (
    probe_abort, probe_bad_values, probe_cold_name, probe_delete_throw, probe_gate, probe_facet, probe_getalarm,
    probe_lateness, probe_outside_during_retry, probe_overlap, probe_past, probe_rearm, probe_restart_pending,
    probe_set_throw, probe_twice,
)
from .lab_probes import (
    scenario_crash_after_effect, scenario_exhaustion, scenario_moves_only_earlier, scenario_normal, scenario_revival,
    scenario_wake_evicted,
)
from .fid_probes import (
    probe_ctor_fail, probe_delete_all, probe_deploy_removes_alarm, probe_lateness_many, probe_long_alarm,
    probe_no_alarm_class, probe_same_instant, probe_turn_abort,
)
from .sql_probes import probe_sql_auth, probe_sql_errors, probe_sql_time, probe_sql_txsync
from .round3 import SPIN_MS, probe_round3
from .workerd import DEFAULT_COMPAT_DATE

__all__ = ["ProbeSpec", "PROBES", "QUICK", "LONG"]


@dataclass(frozen=True)
class ProbeSpec:
    fn: Callable[..., dict]
    kwargs: dict
    long: bool = False
    restarts: bool = False  # stops/starts workerd: never run concurrently with others
    # the simulated side's SimWorkerd settings (default: profile "workerd" with local workerd's eviction);
    # a probe of a behaviour only the workerd-local profile models is simulated under that profile
    sim: dict = field(default_factory=dict)
    # runs on a workerd of its own started at this compatibility date (None: the twin's DEFAULT_COMPAT_DATE)
    compat_date: Optional[str] = None


# the workerd-local profile at the twin's compatibility date (workerd.DEFAULT_COMPAT_DATE)
LOCAL = {"profile": "workerd-local", "compatibility_date": DEFAULT_COMPAT_DATE}

PROBES: dict[str, ProbeSpec] = {
    "normal": ProbeSpec(scenario_normal, {}),
    "crash_after_effect": ProbeSpec(scenario_crash_after_effect, {}),
    "moves_only_earlier": ProbeSpec(scenario_moves_only_earlier, {}),
    "exhaustion": ProbeSpec(scenario_exhaustion, {}, long=True),
    "revival_quick": ProbeSpec(scenario_revival, {"after_exhaustion": False}, restarts=True),
    "revival": ProbeSpec(scenario_revival, {"after_exhaustion": True}, long=True, restarts=True),
    "wake_evicted": ProbeSpec(scenario_wake_evicted, {}),
    "getalarm": ProbeSpec(probe_getalarm, {}),
    "bad_values": ProbeSpec(probe_bad_values, {}),
    "past": ProbeSpec(probe_past, {}),
    "twice_later": ProbeSpec(probe_twice, {"first_ms": 400, "second_ms": 900, "await_between": True}),
    "twice_earlier_same_turn": ProbeSpec(probe_twice, {"first_ms": 900, "second_ms": 400, "await_between": False}),
    "delete_throw": ProbeSpec(probe_delete_throw, {}),
    "set_throw": ProbeSpec(probe_set_throw, {"delay_ms": 1000}),
    "set_throw_late": ProbeSpec(probe_set_throw, {"delay_ms": 4000}),
    "gate": ProbeSpec(probe_gate, {}),
    "abort_retry": ProbeSpec(probe_abort, {"retry_alarm": True}),
    "abort_no_retry": ProbeSpec(probe_abort, {"retry_alarm": False, "observe_s": 9.0}),
    # ~16 s of real time, as wake_evicted: quick (they run in parallel with the others)
    "cold_name": ProbeSpec(probe_cold_name, {}, sim=LOCAL),
    # the same at a compatibility date before 2026-03-15 (cloudflare-docs PR 28956's cut-off for production)
    "cold_name_2026_01": ProbeSpec(probe_cold_name, {}, sim={**LOCAL, "compatibility_date": "2026-01-28"},
                                   compat_date="2026-01-28"),
    "rearm_now": ProbeSpec(probe_rearm, {"chain": 5, "at": "now"}, sim=LOCAL),
    "rearm_scheduled": ProbeSpec(probe_rearm, {"chain": 5, "at": "scheduled"}, sim=LOCAL),
    "overlap_inside": ProbeSpec(probe_overlap, {"variant": "inside"}),
    "overlap_outside": ProbeSpec(probe_overlap, {"variant": "outside", "sleep_ms": 600}),
    "lateness": ProbeSpec(probe_lateness, {}),
    "outside_retry_earlier": ProbeSpec(probe_outside_during_retry, {"variant": "earlier"}),
    "outside_retry_later": ProbeSpec(probe_outside_during_retry, {"variant": "later"}),
    "outside_retry_delete": ProbeSpec(probe_outside_during_retry, {"variant": "delete"}),
    "facet": ProbeSpec(probe_facet, {}),
    "restart_past_due": ProbeSpec(probe_restart_pending, {"variant": "past_due"}, restarts=True),
    "restart_future": ProbeSpec(probe_restart_pending, {"variant": "future"}, restarts=True),
    # the fidelity probes (fid_probes.py, the Fid lab object): turns, constructors, no alarm(), limits, order
    "turn_abort_await": ProbeSpec(probe_turn_abort, {"how": "await"}),
    "turn_abort_noawait": ProbeSpec(probe_turn_abort, {"how": "noawait"}),
    "turn_abort_sync": ProbeSpec(probe_turn_abort, {"how": "sync"}),
    "ctor_fail_2": ProbeSpec(probe_ctor_fail, {"fails": 2}),
    "ctor_fail_never": ProbeSpec(probe_ctor_fail, {"fails": 1000, "observe_s": 40.0}),
    "no_alarm_class": ProbeSpec(probe_no_alarm_class, {}),
    # a stored alarm, then a restart onto code whose class lost alarm() (~22 s of real time, on a workerd of its own)
    "deploy_removes_alarm": ProbeSpec(probe_deploy_removes_alarm, {}, restarts=True),
    "same_instant": ProbeSpec(probe_same_instant, {}),
    "delete_all_2026_11": ProbeSpec(probe_delete_all, {}),
    "delete_all_2026_01": ProbeSpec(probe_delete_all, {}, sim={"compatibility_date": "2026-01-28"},
                                    compat_date="2026-01-28"),
    "lateness_many": ProbeSpec(probe_lateness_many, {}, long=True),
    # 16.5 minutes of real time: the 15-minute limit
    "long_alarm": ProbeSpec(probe_long_alarm, {}, long=True),
    # the SQL probes (sql_probes.py, the SqlProbe twin object): authorizer, error texts, clock, transactionSync
    "sql_auth": ProbeSpec(probe_sql_auth, {}),
    "sql_errors": ProbeSpec(probe_sql_errors, {}),
    "sql_time": ProbeSpec(probe_sql_time, {}),
    "sql_txsync": ProbeSpec(probe_sql_txsync, {}),
    # round3.js: transactions, RPC errors, stored values, setAlarm's argument, a CPU loop (simulated in the
    # JavaScript host, the loop charged a deterministic SPIN_MS: Simulation(cpu_time=...))
    "round3": ProbeSpec(probe_round3, {}, sim={"cpu_time": SPIN_MS}),
}

QUICK = [n for n, s in PROBES.items() if not s.long]
LONG = [n for n, s in PROBES.items() if s.long]
