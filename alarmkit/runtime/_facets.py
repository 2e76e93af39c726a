"""Facets (``ctx.facets``), how their alarms fail, and the parent-owned alarm proxy.

A facet is a child object with its own SQLite storage, hosted inside its parent and reached
only through it. workerd's alarm scheduler can deliver only to root actors, so a facet's
``set_alarm()`` fails, in one of two ways chosen by ``Profile.facet_alarms``:

- ``"commit-breaks-actor"`` (workerd before PR #7085, profile ``workerd-2026-07``): the call
  appears to succeed; the commit fails later with ``alarms are not yet implemented for
  SQLite-backed Durable Objects`` and breaks the whole actor: the parent, its other facets, and
  every call in flight on any of them (journal kind ``actor_broken``).
- ``"commit-breaks-facet"`` (workerd 2026-11-17, profile ``workerd``): ``set_alarm()`` resolves
  and ``get_alarm()`` shows the time; the commit fails with ``Facets currently cannot set
  alarms.``: the facet breaks, every call into it pending or running fails, and so do later calls
  on the same stub; getting the facet again gives a fresh instance with no alarm; the parent's own
  work carries on (journal kind ``facet_broken``).

Either way the writes made since the last good commit are lost, as the failed transaction is.

This module is the runtime's side (facet hosts, ``ctx.facets``, facet stubs). The fix users
write against, a root parent that owns the one real alarm and a shim for facet code, is the
public ``alarmkit.facets`` (``AlarmProxyParent``, ``facet_alarm_state``).
"""

from __future__ import annotations

from typing import Any, Callable

from ..kernel import Future
from ._object import DurableObject
from ._host import _UNSET, Host, check_method
from ..errors import ActorBroken, AlarmkitError, FacetAlarmError, FacetBroken, FacetsUnavailable, InternalError, ObjectCrashed

__all__ = [
    "ACTOR_BROKEN_MESSAGE", "FACET_BROKEN_MESSAGE", "FacetHost", "FacetStub", "Facets", "facets_of",
]

# src/workerd/io/actor-sqlite.c++, the default ActorSqlite::Hooks::scheduleRun()
ACTOR_BROKEN_MESSAGE = "alarms are not yet implemented for SQLite-backed Durable Objects"
# workerd PR #7085 facet hooks; observed on workerd@1.20261117.1
FACET_BROKEN_MESSAGE = "Facets currently cannot set alarms."
MODES = ("commit-breaks-facet", "commit-breaks-actor")


# -- facets ------------------------------------------------------------------------------------------------
class _FacetSlot:
    """What a facet host needs of a namespace: the binding it is journaled under and its class."""

    __slots__ = ("binding", "cls")

    def __init__(self, binding: str, cls: type | None) -> None:
        self.binding = binding
        self.cls = cls


class _NoAlarms:
    """A facet's ``AlarmBackend``: nothing is ever stored (``FacetHost.commit`` fails the commit
    that would store it), so there is nothing to arm, deliver, shut down or reload."""

    @staticmethod
    def get(host: Host) -> None:
        return None

    @staticmethod
    def arm(host: Host, at: int, cause: str) -> None:
        raise InternalError(f"facet {host.label}: an alarm reached the no-alarms backend (cause {cause!r})")

    @staticmethod
    def disarm(host: Host, cause: str) -> None:
        return None

    @staticmethod
    def shutdown() -> None:
        return None

    @staticmethod
    def reload() -> None:
        return None


class FacetHost(Host):
    """A facet: its own database, no idle timer of its own, and the commit path that fails."""

    __slots__ = ("doomed", "generation", "break_error", "staged_at_ms", "held")

    def __init__(self, parent: Host, name: str) -> None:
        super().__init__(parent.sim, _FacetSlot(parent.namespace.binding, None), name, parent)
        self.alarm_backend = _NoAlarms()
        self.doomed: Future | None = None  # the failing commit, while it is in flight
        self.generation = 0  # bumped when the facet (or its actor) breaks: old stubs are dead
        self.break_error: FacetAlarmError | None = None
        self.staged_at_ms: int | None = None
        self.held: list[str] = []  # calls whose results wait on the failing commit

    def _touch(self) -> None:
        # a facet lives and dies with its parent: no idle eviction of its own
        return

    def commit(self) -> None:
        if self.doomed is not None:
            return  # everything after the failing commit waits behind it, and is lost with it
        if self.staged is _UNSET:
            self.db.commit()
            return
        at, _cause = self.staged
        if at is None:
            # delete_alarm with no alarm stored changes no metadata: nothing reaches the hooks
            self.staged = _UNSET
            self.db.commit()
            return
        mode = self.sim.profile.facet_alarms
        if mode not in MODES:
            raise AlarmkitError(f"profile {self.sim.profile.name!r} has facet_alarms={mode!r}; use one of {list(MODES)}")
        # set_alarm "appears to succeed": the staged time stays visible to get_alarm, the
        # transaction stays open, and the output gate fails once this turn's microtasks are done
        self.doomed = doomed = Future()
        self.staged_at_ms = self.sim.kernel.now
        self.sim.kernel.call_later(0, self._commit_fails, doomed, at, mode)

    def _commit_fails(self, doomed: Future, at: int, mode: str) -> None:
        if self.doomed is not doomed:
            return  # the facet went away before its commit was attempted
        sim = self.sim
        if mode == "commit-breaks-facet":
            err = FacetBroken(FACET_BROKEN_MESSAGE)
            sim.log("facet_broken", self, at, None, None, _break_detail(err, mode, self, [self]))
            _mark_broken([self], err)
            self.drop(err)
            return
        root = self
        while root.parent is not None:
            root = root.parent
        tree = _tree(root)
        err = ActorBroken(ACTOR_BROKEN_MESSAGE)
        sim.log("actor_broken", root, at, None, None, {**_break_detail(err, mode, self, tree), "facet": self.label})
        _mark_broken([h for h in tree if isinstance(h, FacetHost)], err)
        root.drop(err)  # the parent's tasks and every facet's (Host.drop cascades)

    def drop(self, exc: BaseException) -> None:
        doomed, self.doomed = self.doomed, None
        self.staged_at_ms = None
        self.held = []
        super().drop(exc)
        if doomed is not None and not doomed.done():
            doomed.set_exception(exc)

    async def output_gate(self, name: str) -> None:
        """Wait for the commit a result depends on; if that commit fails, so does the call."""
        await super().output_gate(name)  # the call's writes commit (or fail to) when its turn ends
        doomed = self.doomed
        if doomed is not None:
            self.held.append(name)
            await doomed


def _tree(root: Host) -> list[Host]:
    out, todo = [], [root]
    while todo:
        h = todo.pop()
        out.append(h)
        todo.extend(h.facets.values())
    return out


def _break_detail(err: FacetAlarmError, mode: str, facet: FacetHost, hosts: list[Host]) -> dict:
    return {
        "error": type(err).__name__, "message": str(err), "mode": mode,
        "set_at_ms": facet.staged_at_ms,
        "calls": [f"{h.label}:{t.name}" for h in hosts for t in h.tasks],
        "held": [f"{h.label}:{n}" for h in hosts if isinstance(h, FacetHost) for n in h.held],
    }


def _mark_broken(facets: list[FacetHost], err: FacetAlarmError) -> None:
    for f in facets:
        f.generation += 1
        f.break_error = err


def _resolve_class(factory: Any, name: str) -> type:
    value = factory if isinstance(factory, type) else factory()
    if isinstance(value, dict):  # workerd's shape: () => ({ class: ... })
        value = value.get("class")
    if not (isinstance(value, type) and issubclass(value, DurableObject)):
        raise AlarmkitError(
            f"ctx.facets.get({name!r}, factory): the factory gave {value!r}; return a DurableObject subclass "
            "(or {'class': cls}), e.g. ctx.facets.get(name, lambda: MyFacet)"
        )
    return value


class Facets:
    """``ctx.facets``: ``get(name, factory)`` gives a stub to a child object hosted in this one."""

    __slots__ = ("_host",)

    def __init__(self, host: Host) -> None:
        self._host = host

    def get(self, name: str, factory: Callable[[], Any] | type) -> FacetStub:
        """A stub to facet ``name``; ``factory()`` names its class when it has to start."""
        host = self._host
        host.check_alive()
        if not isinstance(name, str) or not name:
            raise AlarmkitError(f"facet names are non-empty strings, got {name!r}")
        facet = host.facets.get(name)
        if facet is None:
            facet = host.facets[name] = FacetHost(host, name)
        if facet.instance is None:
            facet.namespace.cls = _resolve_class(factory, name)
        return FacetStub(facet)

    def abort(self, name: str, reason: str = "aborted") -> None:
        """Drop facet ``name``'s running instance (its storage stays); its calls in flight fail."""
        facet = self._host.facets.get(name)
        if facet is not None:
            facet.evict(reason, f"facet {facet.label} was aborted: {reason}")

    def delete(self, name: str) -> None:
        """Abort facet ``name`` and delete its storage."""
        self.abort(name, "deleted")
        self._host.facets.pop(name, None)

    def __repr__(self) -> str:
        return f"<facets of {self._host.label}: {sorted(self._host.facets)}>"


def facets_of(host: Host) -> Facets:
    """``ctx.facets`` for ``host``; raises ``FacetsUnavailable`` where the profile has no facets."""
    if host.sim.profile.facet_alarms is None:
        raise FacetsUnavailable(
            f"ctx.facets is not defined on profile {host.sim.profile.name!r} (it has no facets, as celld has none); "
            "run facet code under profile 'workerd' or 'workerd-2026-07'"
        )
    return Facets(host)


class FacetStub:
    """A stub to a facet: ``await stub.method(*args)`` is an RPC into it, through its parent."""

    __slots__ = ("_host", "_generation", "_parent_ctx")

    def __init__(self, host: FacetHost) -> None:
        self._host = host
        self._generation = host.generation
        self._parent_ctx = host.parent.ctx

    @property
    def id(self) -> str:
        return self._host.name

    def __getattr__(self, method: str) -> Callable[..., Any]:
        check_method(self._host.namespace.cls, method, "facet class ")
        host = self._host
        return lambda *args, **kwargs: host.sim.rpc(host, method, args, kwargs, self._check)

    def _check(self) -> None:
        host = self._host
        if host.generation != self._generation:
            raise host.break_error  # later calls on a broken facet's stub fail the same way
        if host.parent.ctx is not self._parent_ctx or host.parent.ctx is None:
            raise ObjectCrashed(
                f"facet {host.label}: the parent instance that handed out this stub is gone; "
                "get the facet again through the parent's ctx.facets"
            )

    def __repr__(self) -> str:
        return f"<FacetStub {self._host.label}>"

