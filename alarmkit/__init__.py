"""alarmkit: see and test how Durable Object alarms behave, under a deterministic virtual clock."""

from ._kernel import Future, Kernel, Task
from ._object import AlarmInfo, DurableObject, DurableObjectState
from ._runtime import Simulation, Stub
from ._facets import ActorBroken, AlarmProxyParent, FacetBroken, FacetsUnavailable, facet_alarm_state
from .errors import (
    AlarmkitError, AlarmTimeError, HandlerTimeout, InternalError, InvalidValue, JournalLocked, JournalWriteError, ObjectCrashed,
    RunawayError, ScenarioError,
)
from .faults import FaultPlan, FaultPlanError, Faults, InjectedError, UncountedFailure
from .invariants import Obligation, Report, Violation, check, check_run
from .explore import Counterexample, Exploration, FaultSpace, explore
from .journal import Journal
from .profiles import PROFILES, Latency, Profile, get_profile
from .scenarios import SCENARIOS, list_scenarios, run_scenario, scenario
from ._storage import SqlError

__version__ = "0.1.0"

__all__ = [
    "AlarmInfo", "AlarmkitError", "DurableObject", "DurableObjectState", "Faults", "Future", "HandlerTimeout",
    "InjectedError", "InternalError", "Journal", "JournalLocked", "Kernel", "Latency", "ObjectCrashed", "PROFILES",
    "Profile", "SCENARIOS", "ScenarioError", "Simulation", "SqlError", "Stub", "Task", "UncountedFailure",
    "get_profile", "list_scenarios", "run_scenario", "scenario",
    "FaultPlan", "FaultPlanError", "FaultSpace", "Obligation", "Report", "Violation", "check", "check_run",
    "Counterexample", "Exploration", "explore",
    "ActorBroken", "AlarmProxyParent", "FacetBroken", "FacetsUnavailable", "facet_alarm_state",
    "AlarmTimeError", "InvalidValue", "JournalWriteError", "RunawayError",
]
