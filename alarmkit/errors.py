"""Every error alarmkit raises on purpose derives from ``AlarmkitError``."""

from __future__ import annotations

__all__ = [
    "AlarmkitError",
    "InternalError",
    "ObjectCrashed",
    "HandlerTimeout",
    "JournalLocked",
    "ScenarioError",
    "PlanNotApplied",
]


class AlarmkitError(Exception):
    """Base class: a misuse of alarmkit, with the value at fault and the way out in the message."""


class InternalError(AlarmkitError):
    """A broken internal invariant: this should never happen; please report it."""


class ObjectCrashed(AlarmkitError):
    """The process hosting an object died while a call or handler was running in it."""


class HandlerTimeout(AlarmkitError):
    """``alarm()`` ran past the profile's wall-clock limit (15 minutes on workerd)."""


class JournalLocked(AlarmkitError):
    """The journal file is held open by another process."""


class ScenarioError(AlarmkitError):
    """A scenario name or parameter that does not exist or is out of range."""


class PlanNotApplied(AlarmkitError):
    """``explore(strict=True)``: an entry of the fault plan injected nothing in any run.
    ``exploration`` holds what was found anyway."""

    def __init__(self, message: str, exploration: object = None) -> None:
        super().__init__(message)
        self.exploration = exploration
