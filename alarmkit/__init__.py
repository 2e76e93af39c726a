"""alarmkit: see and test how Durable Object alarms behave, under a deterministic virtual clock."""

from ._kernel import Kernel
from .runtime import AlarmInfo, DurableObject, DurableObjectState, Future, Inspector, Simulation, Stub, Task
from .facets import AlarmProxyParent, facet_alarm_state
from .errors import (
    Aborted, ActorBroken, AlarmkitError, AlarmTimeError, FacetAlarmError, FacetBroken, FacetsUnavailable, FaultPlanError,
    HandlerTimeout, InjectedError, InternalError, InvalidValue, JournalLocked, JournalWriteError, ObjectCrashed,
    RunawayError, ScenarioError, SqlError, UncountedFailure, WorkerdError,
)
from .faults import FaultPlan, Faults
from .invariants import Obligation, Report, Violation, check, check_run
from .explore import Counterexample, Exploration, FaultSpace, explore
from .journal import EventRow, Journal
from .profiles import PROFILES, Latency, Profile, get_profile
from .scenarios import SCENARIOS, RunResult, list_scenarios, run_scenario, scenario
from .diff import RunDiff, diff

__version__ = "0.1.0"

__all__ = [
    "AlarmInfo", "AlarmkitError", "Inspector", "DurableObject", "DurableObjectState", "Faults", "Future", "HandlerTimeout",
    "InjectedError", "InternalError", "Journal", "JournalLocked", "Kernel", "Latency", "ObjectCrashed", "PROFILES",
    "Profile", "SCENARIOS", "ScenarioError", "Simulation", "SqlError", "Stub", "Task", "UncountedFailure",
    "get_profile", "list_scenarios", "run_scenario", "scenario", "RunResult",
    "FaultPlan", "FaultPlanError", "FaultSpace", "Obligation", "Report", "Violation", "check", "check_run",
    "Counterexample", "Exploration", "explore", "EventRow",
    "ActorBroken", "AlarmProxyParent", "FacetAlarmError", "FacetBroken", "FacetsUnavailable", "facet_alarm_state",
    "Aborted", "WorkerdError", "AlarmTimeError", "InvalidValue", "JournalWriteError", "RunawayError",
    "diff", "RunDiff",
]
