"""What user code holds from outside the objects: ``Stub`` (a reference to an object), ``Namespace``
(a class bound under a name), ``Env`` (every namespace by binding) and ``Inspector`` (an object's
committed state, read without waking it). The ``Simulation`` itself is in ``_runtime``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ._host import Host, check_method
from ._object import DurableObject
from ..errors import AlarmkitError

if TYPE_CHECKING:  # pragma: no cover
    from ._types import SimView as Simulation  # a view: the simulation builds stubs

__all__ = ["Stub", "Namespace", "Env", "Inspector"]


class Stub:
    """A reference to an object; ``await stub.method(*args)`` is an RPC into it."""

    __slots__ = ("_sim", "_host")

    def __init__(self, sim: Simulation, host: Host) -> None:
        self._sim = sim
        self._host = host

    @property
    def id(self) -> str:
        return self._host.name

    def __getattr__(self, method: str) -> Callable[..., Any]:
        check_method(self._host.namespace.cls, method)
        return lambda *args, **kwargs: self._sim.rpc(self._host, method, args, kwargs)

    def __repr__(self) -> str:
        return f"<Stub {self._host.namespace.binding}:{self._host.label}>"


class Namespace:
    """A Durable Object class bound under a name; ``get(name)`` gives a stub."""

    def __init__(self, sim: Simulation, binding: str, cls: type) -> None:
        if not (isinstance(cls, type) and issubclass(cls, DurableObject)):
            raise AlarmkitError(f"namespace {binding!r} needs a DurableObject subclass, got {cls!r}")
        self.sim = sim
        self.binding = binding
        self.cls = cls
        self.hosts: dict[str, Host] = {}

    def get(self, name: str) -> Stub:
        if not isinstance(name, str) or not name:
            raise AlarmkitError(f"object names are non-empty strings, got {name!r}")
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = Host(self.sim, self, name)
        return Stub(self.sim, host)


class Env:
    """``env``: every namespace under its binding name."""

    def __repr__(self) -> str:
        return f"<env {sorted(self.__dict__)}>"


class Inspector:
    """Read an object's committed state from outside, without waking it (``sim.inspect(stub)``)."""

    def __init__(self, sim: Simulation, host: Host) -> None:
        self._sim, self._host = sim, host

    @property
    def label(self) -> str:
        """The object's id, or ``parent/facet`` for a facet."""
        return self._host.label

    def sql(self, query: str, *params: Any) -> list[dict]:
        """Rows of a read-only query on the object's committed SQL storage; raises SqlError (e.g. no such table)."""
        return self._host.db.read(query, params)

    def facet(self, name: str) -> Inspector | None:
        """The inspector of this object's facet ``name``, or None if it never created one."""
        child = self._host.facets.get(name)
        return None if child is None else Inspector(self._sim, child)

    @property
    def alarm(self) -> int | None:
        return self._host.alarm_backend.get(self._host)

    @property
    def awake(self) -> bool:
        return self._host.instance is not None

    @property
    def instance(self) -> DurableObject | None:
        return self._host.instance
