"""The public face of the runtime: what a user's objects and scenario scripts use.

``Simulation`` runs Durable Objects under a virtual clock; besides ``namespace``, ``call``, ``run``
and ``inspect`` it offers the scenario API (``call_at``, ``cancel``, ``spawn``, ``journal_event``,
``configure``, ``evict``, ``restart``, ``alarms``). Objects subclass ``DurableObject``; their
``ctx`` is a ``DurableObjectState`` (``storage``, ``facets``, ``start``, ``journal_event``,
``call_parent``...). See docs/scenario-api.md. Everything here is also exported by ``alarmkit``.
"""

from __future__ import annotations

from ..kernel import Future, Task
from ._object import AlarmInfo, DurableObject, DurableObjectState, ObjectId, Storage, alarm_time
from ._txn import Savepoint, Transaction
from ._cpu import parse_cpu_time
from ._runtime import Inspector, Namespace, Simulation, Stub
from .profiles import PROFILES, Latency, Profile, get_profile
from .faults import FaultPlan, Faults
from ._applied import entries, journal_summary, summary_line, unapplied, with_plan_warning

__all__ = [
    "AlarmInfo", "DurableObject", "DurableObjectState", "Future", "Inspector", "Namespace", "ObjectId", "Simulation", "Storage",
    "Stub", "Task", "alarm_time", "Savepoint", "Transaction", "parse_cpu_time",
    "PROFILES", "Latency", "Profile", "get_profile", "FaultPlan", "Faults",
    # what a run's fault plan applied, for the wings above (explore's findings, the reports)
    "entries", "journal_summary", "summary_line", "unapplied", "with_plan_warning",
]

from .._public import publish as _publish  # noqa: E402

_publish("alarmkit.runtime", globals(), __all__)
