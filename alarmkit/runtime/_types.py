"""What the lower modules of the runtime use of the simulation and of a host, as ``Protocol``s.

``Simulation`` (``_runtime``) builds hosts, schedulers and stubs, so those modules cannot import it
without a cycle, even for types. They are typed against these small views instead: each lists the
attributes its users read, and ``Simulation`` and ``Host`` satisfy them. Nothing here runs.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["SimView", "HostView", "NamespaceView"]


class NamespaceView(Protocol):
    """A binding's namespace, as a host reads it."""

    binding: str
    cls: type


class SimView(Protocol):
    """The simulation, as hosts, schedulers, stubs and fault plans read it."""

    kernel: Any  # alarmkit.kernel.Kernel
    profile: Any  # alarmkit.runtime.profiles.Profile
    scheduler: Any  # an AlarmBackend
    faults: Any  # alarmkit.runtime.faults.Faults
    fault_hooks: Any
    buffer: Any  # alarmkit.journal.EventBuffer
    db_pool: Any
    env: Any
    hosts: dict
    down: bool
    seed: int

    def log(self, kind: str, host: Any, scheduled_ms: int | None, prev_ms: int | None, retry_count: int | None,
            detail: Any) -> None: ...

    def make_ctx(self, host: Any) -> Any: ...

    def deliver(self, host: Any, *args: Any) -> Any: ...

    def configure(self, **settings: Any) -> None: ...

    def restart(self, down_ms: int = 0) -> None: ...

    def rpc(self, host: Any, method: str, args: tuple, kwargs: dict) -> Any: ...

    def inspect(self, stub: Any) -> Any: ...


class HostView(Protocol):
    """One object identity (``_host.Host``), as objects, schedulers, turns and fault plans read it."""

    sim: SimView
    name: str
    label: str
    code: int
    instance: Any
    ctx: Any
    parent: Any
    namespace: NamespaceView
    invocations: int
    db: Any
    staged: Any

    def ensure_live(self) -> Any: ...

    def current_cause(self) -> str: ...

    def crash(self, err: BaseException | None = None) -> None: ...

    def evict(self, *args: Any, **kwargs: Any) -> None: ...

    def spawn(self, coro: Any, name: str = "") -> Any: ...

    def stage_alarm(self, *args: Any, **kwargs: Any) -> Any: ...

    def check_alive(self) -> None: ...

    def wrote(self) -> None: ...

    def block_concurrency_while(self, fn: Any) -> Any: ...


