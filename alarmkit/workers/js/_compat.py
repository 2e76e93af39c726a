"""A local stand-in for ``alarmkit/workers/_base.py`` (the shared Workers API, built on another
branch): ``Headers``, ``Request``, ``Response`` and ``Worker`` with the names and signatures that
module gives them, so the JavaScript host switches to the shared classes by changing one import.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

__all__ = ["Headers", "Request", "Response", "Worker"]


class Headers:
    """Case-insensitive header names; ``get(name)`` joins repeated values with ``", "`` as fetch does."""

    def __init__(self, items: Iterable[tuple[str, str]] | dict[str, str] | None = None) -> None:
        pairs = items.items() if isinstance(items, dict) else (items or ())
        self._items: list[tuple[str, str]] = [(str(k).lower(), str(v)) for k, v in pairs]

    def get(self, name: str, default: str | None = None) -> str | None:
        values = [v for k, v in self._items if k == name.lower()]
        return ", ".join(values) if values else default

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __contains__(self, name: str) -> bool:
        return any(k == name.lower() for k, _ in self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class Request:
    """What a ``fetch`` is called with: ``url``, ``method``, ``headers``, ``body`` (text or None)."""

    def __init__(self, url: str, method: str = "GET", headers: Any = None, body: str | bytes | None = None) -> None:
        self.url = str(url)
        self.method = str(method).upper()
        self.headers = headers if isinstance(headers, Headers) else Headers(headers)
        self.body = body.decode("utf-8") if isinstance(body, bytes) else body

    def text(self) -> str:
        return self.body or ""

    def json(self) -> Any:
        return json.loads(self.text())

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.url}>"


class Response:
    """A fetch's answer: ``status``, ``headers``, ``text()``, ``json()``."""

    def __init__(self, body: str | bytes | None = None, status: int = 200, headers: Any = None) -> None:
        self.status = int(status)
        self.headers = headers if isinstance(headers, Headers) else Headers(headers)
        self._body = body.decode("utf-8") if isinstance(body, bytes) else (body or "")

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self._body

    def json(self) -> Any:
        return json.loads(self._body)

    def __repr__(self) -> str:
        return f"<Response {self.status}>"


class Worker:
    """A loaded worker: ``env`` (its bindings: a namespace's ``get``/``getByName`` give stubs) and
    ``fetch(url, method=, headers=, body=)``, an awaitable of the ``Response`` of the module's
    default export (drive it with ``sim.call``)."""

    def __init__(self, env: Any, fetch: Callable[[Request], Any]) -> None:
        self.env = env
        self._fetch = fetch

    def fetch(self, url: str, method: str = "GET", headers: Any = None, body: str | bytes | None = None) -> Any:
        return self._fetch(Request(url, method=method, headers=headers, body=body))
