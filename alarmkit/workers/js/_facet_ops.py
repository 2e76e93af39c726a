"""``ctx.facets`` of a JavaScript object (host/facets.mjs): each ``get``, ``abort`` and ``delete`` is done
by the Python runtime's facet model (``ctx.facets`` of the object's Python side, alarmkit/runtime/_facets.py),
and every call into a facet goes through the ``FacetStub`` that model handed out. The rules (a facet's
own storage, its alarm that cannot be set and the break that follows, a stub that dies with its
generation, abort and delete) live there once; this module only keeps the stubs the JS side names by
number."""

from __future__ import annotations

from typing import Any

__all__ = ["FACET", "facet_op", "facet_stub"]

FACET = "#facet"  # the outbound "binding" facets.mjs gives a call into a facet


def facet_op(bridge: Any, obj: Any, op: list) -> Any:  # bridge: a _bridge.Bridge (not imported: no cycle)
    """``["facetGet", iid, name, class or None, methods]``: the stub's number and the facet's label (None
    when asked without a class and the facet is not running: the startup callback is then called);
    ``["facetAbort", iid, name, reason]``; ``["facetDelete", iid, name]``."""
    kind, name = op[0], op[2]
    facets = obj.ctx.facets  # FacetsUnavailable where the profile has no facets
    if kind == "facetAbort":
        facets.abort(name, op[3])
        return None
    if kind == "facetDelete":
        facets.delete(name)
        return None
    if op[3] is None:  # is it running? workerd calls the startup callback only when it is not
        child = obj.ctx._host.facets.get(name)
        if child is None or child.instance is None:
            return None
        stub = facets.get(name, child.namespace.cls)
    else:
        stub = facets.get(name, bridge.facet_class(op[3], op[4]))
    return {"sid": facet_stub(bridge, obj._iid, name, stub), "label": stub._host.label}


def facet_stub(bridge: Any, iid: int, name: str, stub: Any) -> int:
    """The number of ``stub``: a stub of the same facet host and generation as the last one this parent
    instance got for ``name`` is that one (they behave alike), so gets in a loop keep one number."""
    key = (iid, name)
    last = bridge.facet_last.get(key)
    if last is not None:
        sid = last
        old = bridge.facet_stubs[sid]
        if old._host is stub._host and old._generation == stub._generation:
            return sid
    sid = next(bridge.sids)
    bridge.facet_stubs[sid] = stub
    bridge.facet_last[key] = sid
    return sid
