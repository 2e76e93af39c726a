"""The members of workerd's ``DurableObjectState``, ``DurableObjectStorage`` and ``SqlStorage`` (as
``@cloudflare/workers-types`` declares them) that the Python Worker host does not implement: each one is
refused by name, a ``MemberUnsupported`` (a ``WorkerUnsupported`` and an ``AttributeError``: ``hasattr``
is False) saying what and why, never a raw ``AttributeError`` in the worker's code. One table, read by the ``__getattr__`` of ``JsState``, ``JsStorage`` and ``JsSql`` (``_state``): a name
the class implements never reaches it, and a name the table does not hold is Python's ``AttributeError``
(as a member workerd lacks is). ``tests/workers/python/test_pyworkers_surface_check.py`` reads the
declarations and holds both sets, as the JavaScript host's check does (its table: ``js/host/surface.mjs``).
"""

from __future__ import annotations

from typing import NoReturn

from ...errors import MemberUnsupported

__all__ = ["REFUSED", "refuse"]

_SOCKETS = ("WebSockets are not simulated for Python Workers by alarmkit; drive the object through RPC methods "
            "or fetch instead")
_BOOKMARKS = "point-in-time recovery (bookmarks) is not modelled by the simulation"

REFUSED: dict[str, dict[str, str]] = {
    "ctx": {
        **{name: _SOCKETS for name in (
            "acceptWebSocket", "getWebSockets", "getTags", "setWebSocketAutoResponse", "getWebSocketAutoResponse",
            "getWebSocketAutoResponseTimestamp", "setHibernatableWebSocketEventTimeout",
            "getHibernatableWebSocketEventTimeout")},
        "facets": "facets are offered to JavaScript workers only (docs/workers.md, Facets)",
        "exports": "the module's exports as bindings are offered to JavaScript workers only; bind the class in "
                   "the wrangler file and use env",
        "container": "containers are not simulated",
    },
    "ctx.storage": {name: _BOOKMARKS for name in (
        "getCurrentBookmark", "getBookmarkForTime", "onNextSessionRestoreBookmark")},
    "ctx.storage.sql": {
        "Statement": "prepared statements are not offered; call sql.exec(query, *bindings), which takes the "
                     "same bindings",
    },
}


def refuse(where: str, name: str, type_name: str) -> NoReturn:
    """Raise for ``where.name`` (``where`` a key of ``REFUSED``): the refusal naming it, or Python's
    ``AttributeError`` (``type_name`` has no attribute) for a name the runtime does not declare either."""
    reason = REFUSED[where].get(name)
    if reason is None:
        raise AttributeError(f"{type_name} has no attribute {name!r}")
    raise MemberUnsupported(f"{where}.{name} is refused under alarmkit's Python Worker host: {reason}")
