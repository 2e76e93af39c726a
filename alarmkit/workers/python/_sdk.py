"""The ``workers`` module a Python Worker imports (Cloudflare's workers-runtime-sdk, rebuilt on the
simulation): ``DurableObject``, ``WorkerEntrypoint``, ``Request``, ``Response``, ``FetchResponse``,
``handler``, ``python_to_rpc``/``python_from_rpc``, and ``fetch``, refused (no network). One module per
loaded worker (``make_sdk``), so two workers share no class or state.

Why a rebuild and not the SDK itself: the SDK (1.9.5 read for this) runs on Pyodide's ``JsProxy``
(``to_py(default_converter=...)``, ``constructor.name`` checks) and workerd-internal modules
(``_cloudflare_compat_flags``, ``_pyodide_entrypoint_helper``); faking those faithfully is more code
than the SDK's few conversion rules, which ``_convert`` copies with their source named. docs/workers.md.
"""

from __future__ import annotations

import json
import types
from typing import Any

from ...errors import WorkerUnsupported
from ...runtime import DurableObject as _SimObject
from .._base import Headers, Request as _BaseRequest
from ._convert import JsDict, from_rpc, to_rpc

__all__ = ["make_sdk", "outbound_fetch"]


def outbound_fetch(what: str = "fetch") -> WorkerUnsupported:
    return WorkerUnsupported(
        f"{what}(...): outbound requests leave the simulation, which alarmkit does not do; bind the service "
        "instead (load_worker(..., bindings={'API': my_fake}), then await env.API.fetch(...) in the worker)")


class _Body:
    """A request's or response's body readers, async as in the SDK (``await r.text()``)."""

    _data: bytes

    async def text(self) -> str:
        return self._data.decode("utf-8", "replace")

    async def bytes(self) -> bytes:
        return self._data

    async def _json_async(self) -> Any:
        return json.loads(self._data.decode("utf-8", "replace"))


class Request(_Body):
    """``workers.Request(input, method=, headers=, body=)``: ``url``, ``method``, ``headers``, ``await text()``/``json()``/``bytes()``."""

    def __init__(self, input: Any, **options: Any) -> None:
        if isinstance(input, Request):
            base = input._req
            options = {"method": base.method, "headers": base.headers, "body": base.body, **options}
            input = base.url
        elif isinstance(input, _BaseRequest):
            self._req, self._data = input, input.body
            return
        unknown = sorted(set(options) - {"method", "headers", "body", "cf", "redirect", "signal"})
        if unknown:
            raise TypeError(f"Request() got an unexpected option {unknown[0]!r}")
        self._req = _BaseRequest(input, options.get("method", "GET"), options.get("headers"), options.get("body"))
        self._data = self._req.body

    url = property(lambda self: self._req.url)
    method = property(lambda self: self._req.method)
    headers = property(lambda self: self._req.headers)
    body_used = property(lambda self: False)

    async def json(self, **kwargs: Any) -> Any:
        return await self._json_async()

    def clone(self) -> Request:
        return Request(self)

    def __repr__(self) -> str:
        return f"Request(method={self.method!r}, url={self.url!r})"


class _JsonMethod:
    """``Response.json(data)`` (static: a JSON response) and ``await resp.json()`` (an instance: read it),
    as the SDK's ``FetchResponse.json`` dispatches."""

    def __get__(self, obj: Any, cls: type) -> Any:
        if obj is None:
            return lambda data, *a, **kw: Response.from_json(data, *a, **kw)
        return obj._json_async


class FetchResponse(_Body):
    """A response read by the caller: ``status``, ``ok``, ``headers``, ``await text()``/``json()``/``bytes()``."""

    def __init__(self, body: bytes, status: int, status_text: str, headers: Headers) -> None:
        self._data, self.status, self.status_text, self.headers = body, status, status_text, headers

    ok = property(lambda self: 200 <= self.status <= 299)
    json = _JsonMethod()

    def __repr__(self) -> str:
        return f"Response(status={self.status})"


class Response(FetchResponse):
    """``workers.Response(body=None, status=None, status_text="", headers=None)``; ``Response.json(data)``,
    ``Response.redirect(url, status=302)``. Bodies are text or bytes (streams are not simulated)."""

    def __init__(self, body: Any = None, status: Any = None, status_text: str = "", headers: Any = None,
                 web_socket: Any = None) -> None:
        if web_socket is not None:
            raise WorkerUnsupported("Response(web_socket=...): WebSockets are not simulated by alarmkit")
        if body is not None and not isinstance(body, (str, bytes)):
            raise TypeError(f"Unsupported type in Response: {type(body).__name__}")
        status = 200 if status is None else int(status)
        if not 200 <= status <= 599:
            raise ValueError(f"Response status must be in 200..599, got {status}")
        data = body.encode("utf-8") if isinstance(body, str) else (body or b"")
        hdrs = Headers(headers)
        if isinstance(body, str) and not hdrs.has("content-type"):
            hdrs.set("content-type", "text/plain;charset=UTF-8")
        super().__init__(data, status, status_text, hdrs)

    @staticmethod
    def from_json(data: Any, status: int = 200, status_text: str = "", headers: Any = None) -> Response:
        hdrs = Headers(headers)
        if not hdrs.has("content-type"):
            hdrs.set("content-type", "application/json")
        return Response(json.dumps(data), status, status_text, hdrs)

    @staticmethod
    def redirect(url: str, status: int = 302) -> Response:
        return Response(None, status, "", {"location": url})


def fetch_response(value: Any) -> FetchResponse:
    """What a caller of ``stub.fetch`` gets from the object's ``fetch`` result."""
    if not isinstance(value, FetchResponse):
        raise TypeError(f"fetch() handler returned {type(value).__name__}, not a Response")
    return FetchResponse(value._data, value.status, value.status_text, Headers(value.headers))


def make_sdk(worker: Any) -> types.ModuleType:
    """A fresh ``workers`` module for ``worker``: its own ``DurableObject`` and ``WorkerEntrypoint`` bases."""
    mod = types.ModuleType("workers", "Cloudflare's Python Workers SDK, as alarmkit simulates it")

    class DurableObject(_SimObject):
        """Base class used to define a Durable Object (``self.ctx``, ``self.env``)."""

        def __init__(self, ctx: Any, env: Any) -> None:
            self.ctx = ctx
            self.env = env

    class WorkerEntrypoint:
        """Base class used to define a Worker Entrypoint (``self.ctx``, ``self.env``)."""

        def __init__(self, ctx: Any, env: Any) -> None:
            self.ctx = ctx
            self.env = env

    class WorkflowEntrypoint:
        def __init__(self, *a: Any, **kw: Any) -> None:
            raise WorkerUnsupported("WorkflowEntrypoint: Workflows are not simulated by alarmkit")

    async def _fetch(*args: Any, **kwargs: Any) -> Any:
        raise outbound_fetch("workers.fetch")

    def handler(fn: Any) -> Any:
        return fn

    def import_from_javascript(name: str) -> Any:
        raise WorkerUnsupported(f"import_from_javascript({name!r}): JavaScript modules are not available to a "
                                "Python Worker under alarmkit")

    def _module_getattr(key: str) -> Any:
        if key == "env":
            return worker.env
        if key in ("wait_until", "waitUntil"):
            return lambda aw: worker.sim.spawn(aw, "waitUntil")
        raise AttributeError(f"module 'workers' has no attribute {key!r}")

    mod.__dict__.update(
        DurableObject=DurableObject, WorkerEntrypoint=WorkerEntrypoint, WorkflowEntrypoint=WorkflowEntrypoint,
        Request=Request, Response=Response, FetchResponse=FetchResponse, Headers=Headers, fetch=_fetch,
        handler=handler, python_to_rpc=to_rpc, python_from_rpc=from_rpc, JsDict=JsDict,
        import_from_javascript=import_from_javascript, fetch_response=fetch_response, __getattr__=_module_getattr,
    )
    return mod
