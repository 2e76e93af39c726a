"""alarmkit: see and test how Durable Object alarms behave, under a deterministic virtual clock.

The package is built in wings, each a folder whose ``__init__`` is its face, read bottom-up:
``kernel`` (clock, heap, tasks) < ``journal`` (event rows, kinds, invariants, the DuckDB writer) <
``runtime`` (simulation, objects, storage, alarm backends, profiles, facets, fault plans) <
``scenarios`` < ``viz`` (figures, reports, the widget, the teaching bundle) < ``explore`` (search,
shrinking, replay, sweeps) < ``calibrate`` / ``realruns`` (real workerd) < ``cli``. The floor
(``errors``, value checks, the one way to write a file) serves every wing. Everything a user needs
is exported here; ``alarmkit.plots``, ``alarmkit.report``, ``alarmkit.widgets``, ``alarmkit.faults``,
``alarmkit.invariants``, ``alarmkit.profiles`` and ``alarmkit.facets`` are their wings' modules.
"""

from ._version import __version__
from .errors import *  # noqa: F403 - every error class: alarmkit.FacetBroken, ...
from . import errors as _errors
from .kernel import Kernel
from .journal import EventRow, Journal
from .journal.invariants import Obligation, Report, Violation, check, check_run
from .runtime import (
    PROFILES, AlarmInfo, DurableObject, DurableObjectState, FaultPlan, Faults, Future, Inspector, Latency, Profile,
    Simulation, Stub, Task, get_profile,
)
from .runtime.facets import AlarmProxyParent, facet_alarm_state
from .scenarios import SCENARIOS, RunResult, list_scenarios, run_scenario, scenario
from . import workers  # noqa: F401  (gives Simulation.load_worker its loader: docs/workers.md)
from .diff import RunDiff, diff
from .explore import Counterexample, Exploration, FaultSpace, explore
from ._public import publish as _publish

__all__ = [
    "AlarmInfo", "Inspector", "DurableObject", "DurableObjectState", "Faults", "Future", "Journal", "Kernel",
    "Latency", "PROFILES", "Profile", "SCENARIOS", "Simulation", "Stub", "Task", "get_profile",
    "list_scenarios", "run_scenario", "scenario", "RunResult", "FaultPlan", "FaultSpace", "Obligation", "Report",
    "Violation", "check", "check_run", "Counterexample", "Exploration", "explore", "EventRow", "AlarmProxyParent",
    "facet_alarm_state", "diff", "RunDiff",
    *_errors.__all__,
]

_publish("alarmkit", globals(), __all__)
