"""Facets (``ctx.facets``), how their alarms fail, and the parent-owned alarm proxy (seed 000).

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

The fix is a root parent that owns the one real alarm (``AlarmProxyParent``) and a shim
(``facet_alarm_state``) that gives facet code the standard alarm API routed to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ._kernel import Future, wrap_awaitable
from ._object import AlarmInfo, DurableObject, alarm_time
from ._host import _UNSET, Host, check_method
from .errors import (
    ActorBroken, AlarmkitError, FacetAlarmError, FacetBroken, FacetsUnavailable, InternalError, ObjectCrashed,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._runtime import Simulation  # noqa: F401

__all__ = [
    "ACTOR_BROKEN_MESSAGE", "FACET_BROKEN_MESSAGE", "ActorBroken", "AlarmProxyParent", "FacetAlarmError",
    "FacetAlarmState", "FacetBroken", "FacetRef", "FacetStub", "Facets", "FacetsUnavailable", "facet_alarm_state",
]

# src/workerd/io/actor-sqlite.c++, the default ActorSqlite::Hooks::scheduleRun() (seed 000)
ACTOR_BROKEN_MESSAGE = "alarms are not yet implemented for SQLite-backed Durable Objects"
# workerd PR #7085 facet hooks; observed on workerd@1.20261117.1 (REFERENCE.md)
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
        if facet is not None and facet.instance is not None:
            facet.sim.log("evict", facet, None, None, None, {"reason": reason, "busy": bool(facet.tasks)})
            facet.drop(ObjectCrashed(f"facet {facet.label} was aborted: {reason}"))

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
        return lambda *args, **kwargs: _facet_rpc(self, method, args, kwargs)

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


async def _facet_rpc(stub: FacetStub, method: str, args: tuple, kwargs: dict) -> Any:
    host = stub._host
    stub._check()
    instance = host.ensure_live()
    try:
        await host.wait_gate()
    except ObjectCrashed:
        stub._check()
        raise
    stub._check()
    host.sim.log("call", host, None, None, None, {"method": method})
    result = getattr(instance, method)(*args, **kwargs)
    if hasattr(result, "__await__"):
        value = await host.spawn(wrap_awaitable(result), f"rpc:{method}")
    else:
        host.commit()
        value = result
    await host.output_gate(f"rpc:{method}")
    return value


# -- the parent-owned alarm proxy -------------------------------------------------------------------------
@dataclass(frozen=True)
class FacetRef:
    """What the parent stores to boot a facet on a cold fire: its name and a recipe key."""

    name: str
    recipe: str

    def to_dict(self) -> dict:
        return {"name": self.name, "recipe": self.recipe}

    @classmethod
    def from_value(cls, value: Any, default_name: str | None = None) -> FacetRef:
        """A FacetRef, ``{"name", "recipe"}``, or a recipe key string (the facet's name is ``default_name``)."""
        if isinstance(value, FacetRef):
            return value
        if isinstance(value, str) and value:
            return cls(default_name or value, value)
        if isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("recipe"), str):
            return cls(value["name"], value["recipe"])
        raise AlarmkitError(f"a facet ref is a recipe key string or {{'name': ..., 'recipe': ...}}, got {value!r}")


_PROXY_DDL = (
    "CREATE TABLE IF NOT EXISTS _alarm_proxy (one INTEGER PRIMARY KEY CHECK (one = 1), "
    "ref TEXT NOT NULL, at_ms INTEGER NOT NULL, gen INTEGER NOT NULL)"
)


class AlarmProxyParent(DurableObject):
    """A root object that owns the one real alarm on behalf of its facets (seed 000, option 1).

    It exposes ``set_alarm(ref, at_ms | None)`` and ``get_alarm(ref)`` as RPC verbs, persists one
    ``{at_ms, ref}`` cell, mirrors it into its own alarm, and on fire boots the facet named by the
    stored ref (``FACET_CLASSES[ref.recipe]``) and replays ``alarm(info)`` into it. A failure
    re-raises, so the parent's native retry ladder covers delivery. All state is in the parent's
    storage: it survives facet rebuilds, parent evictions and restarts. The parent's own alarm is
    the proxy's: a subclass must not use ``ctx.storage.set_alarm`` for anything else.
    """

    FACET_CLASSES: dict[str, type] = {}

    def __init__(self, ctx, env) -> None:
        super().__init__(ctx, env)
        host = ctx._host
        if host.parent is not None:
            raise AlarmkitError(
                f"{type(self).__name__} is hosted as facet {host.label}, whose alarms do not work either; "
                "the alarm proxy must be a root object (a namespace's object)"
            )
        ctx.storage.sql.exec(_PROXY_DDL)

    # -- the verbs facets call --------------------------------------------------------------------------
    async def set_alarm(self, ref: Any, at_ms: int | float | None) -> None:
        ref = FacetRef.from_value(ref)
        cell = self.proxy_cell()
        if at_ms is None:
            if cell is not None and cell["ref"] == ref:
                self.ctx.storage.sql.exec("DELETE FROM _alarm_proxy")
                _log(self.ctx, "proxy_arm", None, cell["at_ms"], {"ref": ref.to_dict(), "op": "delete"})
                await self.ctx.storage.delete_alarm()
            return None
        at = alarm_time(at_ms, self.ctx.now())
        if cell is not None and cell["ref"] != ref and await self.ctx.storage.get_alarm() is not None:
            raise AlarmkitError(
                f"the alarm proxy of {self.ctx.id} holds one alarm, owned by facet {cell['ref'].name!r}; "
                f"facet {ref.name!r} cannot take it while it is pending (one alarm per parent, as per object)"
            )
        gen = cell["gen"] + 1 if cell is not None else 1
        self.ctx.storage.sql.exec(
            "INSERT OR REPLACE INTO _alarm_proxy (one, ref, at_ms, gen) VALUES (1, ?, ?, ?)",
            json.dumps(ref.to_dict()), at, gen,
        )
        _log(self.ctx, "proxy_arm", at, cell["at_ms"] if cell else None, {"ref": ref.to_dict(), "op": "set", "gen": gen})
        await self.ctx.storage.set_alarm(at)  # the cell and the real alarm commit together
        return None

    async def get_alarm(self, ref: Any) -> int | None:
        """The real alarm, if the cell is this facet's: null during a delivery and after abandonment, as natively."""
        cell = self.proxy_cell()
        if cell is None or cell["ref"] != FacetRef.from_value(ref):
            return None
        return await self.ctx.storage.get_alarm()

    # -- delivery -----------------------------------------------------------------------------------------
    async def alarm(self, info: AlarmInfo) -> None:
        cell = self.proxy_cell()
        if cell is None:
            _log(self.ctx, "proxy_deliver", None, None, {"outcome": "no cell", "retry_count": info.retry_count})
            return
        ref = cell["ref"]
        stub = self.facet(ref)
        _log(self.ctx, "proxy_deliver", cell["at_ms"], None, {"ref": ref.to_dict(), "retry_count": info.retry_count})
        await stub.alarm(info)  # a failure re-raises: the parent's retry ladder covers delivery
        after = self.proxy_cell()
        if after is not None and after["gen"] == cell["gen"]:
            self.ctx.storage.sql.exec("DELETE FROM _alarm_proxy WHERE gen = ?", cell["gen"])  # consumed

    def facet(self, ref: Any) -> FacetStub:
        """Boot (or reach) the facet a ref names, from this class's ``FACET_CLASSES`` recipes."""
        ref = FacetRef.from_value(ref)
        cls = self.FACET_CLASSES.get(ref.recipe)
        if cls is None:
            raise AlarmkitError(
                f"{type(self).__name__} has no facet recipe {ref.recipe!r}; FACET_CLASSES has {sorted(self.FACET_CLASSES)}"
            )
        return self.ctx.facets.get(ref.name, lambda: cls)

    def proxy_cell(self) -> dict | None:
        rows = self.ctx.storage.sql.exec("SELECT ref, at_ms, gen FROM _alarm_proxy").to_list()
        if not rows:
            return None
        r = rows[0]
        return {"ref": FacetRef.from_value(json.loads(r["ref"])), "at_ms": r["at_ms"], "gen": r["gen"]}


class _ProxiedStorage:
    """The facet's own storage, except that the alarm calls are RPCs to the parent's proxy."""

    __slots__ = ("_storage", "_state", "sql")

    def __init__(self, storage, state: FacetAlarmState) -> None:
        self._storage = storage
        self._state = state
        self.sql = storage.sql

    def __getattr__(self, name: str) -> Any:  # get, put, delete, list, transaction_sync
        return getattr(self._storage, name)

    def get_alarm(self) -> Future:
        return self._state._call("get_alarm")

    def set_alarm(self, scheduled_time: int | float) -> Future:
        host = self._state._host
        host.check_alive()
        return self._state._call("set_alarm", alarm_time(scheduled_time, host.sim.kernel.now))

    def delete_alarm(self) -> Future:
        return self._state._call("set_alarm", None)


class FacetAlarmState:
    """A ctx-shaped object: everything is the facet's own ``ctx`` except the alarm calls.

    ``storage.set_alarm / get_alarm / delete_alarm`` become RPCs to the hosting parent's
    ``AlarmProxyParent`` verbs, carrying ``ref``; the calls start at once (a forgotten ``await``
    loses nothing) and return awaitables, as the native ones do.
    """

    def __init__(self, ctx, parent_ref: Any) -> None:
        self._ctx = ctx
        self.ref = FacetRef.from_value(parent_ref, ctx.id)
        self.id = ctx.id
        self.storage = _ProxiedStorage(ctx.storage, self)

    def __getattr__(self, name: str) -> Any:  # now, sleep, effect, block_concurrency_while, facets, _host
        return getattr(self._ctx, name)

    def _call(self, verb: str, *args: Any) -> Future:
        host = self._ctx._host
        host.check_alive()
        parent = host.parent
        if parent is None:
            raise AlarmkitError(
                f"facet_alarm_state: {host.label} is a root object, whose own alarms work; use its ctx directly"
            )
        if not issubclass(parent.namespace.cls, AlarmProxyParent) or parent.parent is not None:
            raise AlarmkitError(
                f"facet {host.label}: its parent {parent.label} ({parent.namespace.cls.__name__}) has no alarm proxy; "
                "host the facet in a root AlarmProxyParent subclass"
            )
        sim: Simulation = host.sim
        return host.spawn(sim.rpc(parent, verb, (self.ref.to_dict(), *args), {}), f"proxy:{verb}")

    def __repr__(self) -> str:
        return f"<facet_alarm_state of {self._ctx._host.label} via ref {self.ref.to_dict()}>"


def facet_alarm_state(ctx, parent_ref: Any) -> FacetAlarmState:
    """Wrap a facet's ``ctx`` so its alarm API routes to the parent's proxy under ``parent_ref``.

    ``parent_ref`` is the ref the parent stores and boots on a cold fire: a recipe key of the
    parent's ``FACET_CLASSES`` (the facet's name is its ``ctx.id``), a ``FacetRef``, or a dict.
    Pass the result where the facet's code expects its ctx (``super().__init__(shim, env)``).
    """
    return FacetAlarmState(ctx, parent_ref)


def _log(ctx, kind: str, scheduled: int | None, prev: int | None, detail: dict) -> None:
    host = ctx._host
    host.sim.log(kind, host, scheduled, prev, None, detail)


journal_event = _log  # used by the guestbook keepalive: one row in this run's journal
