"""The parent-owned alarm proxy: the fix for facets' alarms, as user code.

A facet cannot set an alarm (``alarmkit._facets`` describes how that fails on each profile). A
root object that owns the one real alarm on behalf of its facets (``AlarmProxyParent``) and a
shim that gives facet code the standard alarm API routed to it (``facet_alarm_state``) make
facet alarms work. Both are written against the public runtime only (``ctx.parent``,
``ctx.call_parent``, ``ctx.journal_event``, ``ctx.facets``), as a user's own proxy would be.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import AlarmkitError
from . import AlarmInfo, DurableObject, Future, alarm_time

if TYPE_CHECKING:  # pragma: no cover
    from ._facets import FacetStub

__all__ = ["AlarmProxyParent", "FacetAlarmState", "FacetRef", "facet_alarm_state"]


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
    """A root object that owns the one real alarm on behalf of its facets.

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
        if ctx.parent is not None:
            raise AlarmkitError(
                f"{type(self).__name__} is hosted as facet {ctx.label}, whose alarms do not work either; "
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
                self.ctx.journal_event("proxy_arm", prev_ms=cell["at_ms"], detail={"ref": ref.to_dict(), "op": "delete"})
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
        self.ctx.journal_event("proxy_arm", scheduled_ms=at, prev_ms=cell["at_ms"] if cell else None,
                               detail={"ref": ref.to_dict(), "op": "set", "gen": gen})
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
            self.ctx.journal_event("proxy_deliver", detail={"outcome": "no cell", "retry_count": info.retry_count})
            return
        ref = cell["ref"]
        stub = self.facet(ref)
        self.ctx.journal_event("proxy_deliver", scheduled_ms=cell["at_ms"],
                               detail={"ref": ref.to_dict(), "retry_count": info.retry_count})
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
        ctx = self._state._ctx
        ctx.parent  # noqa: B018 - raises ObjectCrashed once the facet no longer runs, before the time is checked
        return self._state._call("set_alarm", alarm_time(scheduled_time, ctx.now()))

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

    def __getattr__(self, name: str) -> Any:  # now, sleep, effect, block_concurrency_while, facets, journal_event...
        return getattr(self._ctx, name)

    def _call(self, verb: str, *args: Any) -> Future:
        ctx = self._ctx
        parent = ctx.parent  # ObjectCrashed if the facet no longer runs
        if parent is None:
            raise AlarmkitError(
                f"facet_alarm_state: {ctx.label} is a root object, whose own alarms work; use its ctx directly"
            )
        if not issubclass(parent.object_class, AlarmProxyParent) or parent.parent is not None:
            raise AlarmkitError(
                f"facet {ctx.label}: its parent {parent.label} ({parent.object_class.__name__}) has no alarm proxy; "
                "host the facet in a root AlarmProxyParent subclass"
            )
        return ctx.call_parent(verb, self.ref.to_dict(), *args, name=f"proxy:{verb}")

    def __repr__(self) -> str:
        return f"<facet_alarm_state of {self._ctx._host.label} via ref {self.ref.to_dict()}>"


def facet_alarm_state(ctx, parent_ref: Any) -> FacetAlarmState:
    """Wrap a facet's ``ctx`` so its alarm API routes to the parent's proxy under ``parent_ref``.

    ``parent_ref`` is the ref the parent stores and boots on a cold fire: a recipe key of the
    parent's ``FACET_CLASSES`` (the facet's name is its ``ctx.id``), a ``FacetRef``, or a dict.
    Pass the result where the facet's code expects its ctx (``super().__init__(shim, env)``).
    """
    return FacetAlarmState(ctx, parent_ref)
