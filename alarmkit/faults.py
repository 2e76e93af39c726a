"""The hook points where faults enter a simulation.

``Faults`` does nothing; a fault plan subclasses it. The runtime calls these hooks and nothing
else, so a new kind of fault never needs a change to the runtime's control flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import AlarmkitError

if TYPE_CHECKING:  # pragma: no cover
    from ._kernel import Task
    from ._runtime import Host, Simulation
    from .profiles import Latency

__all__ = ["Faults", "UncountedFailure", "InjectedError"]


class InjectedError(AlarmkitError):
    """An exception thrown on purpose by a fault plan (a counted failure, as a user error is)."""


class UncountedFailure(AlarmkitError):
    """A failure that is not the worker's fault: retried without using up the retry budget."""


class Faults:
    """No faults. Subclasses override the hooks they need."""

    def install(self, sim: Simulation) -> None:
        """Called once when the simulation starts: schedule evictions, restarts..."""

    def fire_latency(self, host: Host, latency: Latency, rng) -> int:
        return latency.sample(rng)

    def before_alarm(self, host: Host, invocation: int, retry_count: int) -> None:
        """Raise ``InjectedError`` (counted) or ``UncountedFailure`` to fail this attempt."""

    def crash_at_suspend(self, host: Host, task: Task) -> bool:
        """True to kill the process when ``task`` suspends (before this segment commits)."""
        return False

    def before_effect(self, host: Host, name: str, key: Any) -> None:
        """Raise to make the effect fail before it happens."""

    def after_effect(self, host: Host, name: str, key: Any) -> str | None:
        """Return "throw" to raise after the effect happened, "crash" to kill the process."""
        return None

    def after_success(self, host: Host, scheduled_ms: int) -> None:
        """Called when a handler succeeded and the alarm was cleared (duplicate delivery hooks here)."""

    def to_dict(self) -> dict[str, Any] | None:
        return None
