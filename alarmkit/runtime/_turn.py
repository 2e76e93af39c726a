"""The turn model's awaitables (docs/runtime.md, "Turns and commits"): ``Settled``, the result of a
storage call that is known at once, and ``settle_future``, which resolves a future when a turn's commit
is done (or fails it with the reset that dropped the turn)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..kernel import Future
from ..errors import ObjectCrashed

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host  # a view: _host uses turns

__all__ = ["Settled", "settle_future"]


class Settled:
    """A storage call's result, known at once: ``await`` returns it without suspending (in workerd an
    awaited storage op on SQLite-backed storage resolves in the same turn; the turn goes on). The
    await is still a crash point (a cheap check of the fault plan, as a suspension was), and a loop of
    them is bounded: past ``step_limit`` such awaits at one instant, each one suspends, so the kernel's
    step budget stops the loop with its ``RunawayError`` naming the task. A simulation without fault
    hooks shares one ``Settled`` of ``None`` (``host`` None) for every such call: ``Host.settled``."""

    __slots__ = ("sim", "host", "value")

    def __init__(self, sim: Any, host: Host | None, value: Any) -> None:
        self.sim = sim
        self.host = host
        self.value = value

    def __await__(self):
        host = self.host
        sim = self.sim
        kernel = sim.kernel
        task = kernel.current
        if task is not None:
            task.awaits += 1
            if sim.fault_hooks and host.ctx is not None and sim.faults.crash_at_suspend(host, task):
                host.crash(f"injected at await {task.awaits} of {task.name}")
                raise ObjectCrashed(f"object {host.label} crashed (injected at await {task.awaits} of {task.name})")
        if sim.spin_at != kernel.now:
            sim.spin_at, sim.spins = kernel.now, 0
        sim.spins = spins = sim.spins + 1
        if kernel.step_limit is not None and spins > kernel.step_limit:
            return (yield kernel.checkpoint(self.value))  # a real suspension: the kernel counts it
        return self.value


def settle_future(fut: Future, err: BaseException | None) -> None:
    """``Host.after_commit``'s callback for a waiter: resolve ``fut``, or fail it with the reset's error."""
    if err is None:
        fut.set_result(None)
    else:
        fut.set_exception(err)
