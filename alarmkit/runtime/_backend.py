"""``AlarmBackend``: what the runtime asks of an alarm scheduler, the one interface the workerd
scheduler (``_scheduler``), celld's (``_celld``) and a facet's no-alarms backend (``_facets``)
implement. The runtime registers the schedulers a profile can name in ``_runtime.SCHEDULERS``.

A backend stores one alarm per object (``Host``) and, when one is due, runs it with
``Simulation.deliver(host, scheduled_ms, retry_count, done, token)``, the one delivery API:
the runtime calls ``done(token, ok, counted)`` when that attempt is over, and the backend decides
about retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host  # typed against a view: _host imports this module's users

__all__ = ["AlarmBackend"]


@runtime_checkable
class AlarmBackend(Protocol):
    def get(self, host: Host) -> int | None:
        """What ``get_alarm()`` returns for ``host`` now (None: no alarm, or hidden while alarm() runs)."""

    def arm(self, host: Host, at: int, cause: str) -> None:
        """A committed ``set_alarm(at)`` (or the platform's own arm: ``cause`` says whose)."""

    def disarm(self, host: Host, cause: str) -> None:
        """A committed ``delete_alarm()``."""

    def shutdown(self) -> None:
        """The runtime goes down: drop everything held in memory (timers, running fires)."""

    def reload(self) -> None:
        """The runtime is back: arm every stored alarm again."""
