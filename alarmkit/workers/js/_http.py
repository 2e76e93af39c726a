"""Requests and responses across the pipe to the JavaScript host: a ``Response`` from the dict host.mjs
sends (a WebSocket upgrade's 101 with its socket's number), and the dicts it takes back."""

from __future__ import annotations

import hashlib
from typing import Any

from ...errors import AlarmkitError
from .._base import Request, Response

__all__ = ["_effect_key", "_response", "_fetched", "_request_dict", "_response_dict"]


def _response(d: dict) -> Response:
    if d.get("status") == 101:  # a WebSocket upgrade: the socket's end stays in JS (websocket.mjs), named by a number
        res = Response(None, status=200, headers=d.get("headers"))
        res.status, res.websocket = 101, d.get("ws")
        return res
    return Response(d.get("body"), status=d.get("status", 200), headers=d.get("headers"))


def _fetched(res: Response) -> dict:
    """A stub's ``fetch`` answer as the pipe carries it back into JS (a 101's socket by its number)."""
    return {"status": res.status, "headers": res.headers.items(), "body": res.text(), "ws": getattr(res, "websocket", None)}


def _request_dict(req: Request) -> dict:
    # bodies cross the pipe as text (JSON): bytes that are not UTF-8 arrive with U+FFFD in their place
    body = req.body.decode("utf-8", "replace") if req.body else None
    return {"url": req.url, "method": req.method, "headers": req.headers.items(), "body": body}


def _response_dict(out: Any, binding: str) -> dict:
    """What a Python stub of a binding answered (a ``Response``, a dict or a str), as the pipe carries it."""
    if isinstance(out, str):
        out = Response(out)
    if isinstance(out, dict):
        out = Response(out.get("body"), out.get("status", 200), out.get("headers"))
    if not isinstance(out, Response):
        raise AlarmkitError(f"the stub for env.{binding} returned {type(out).__name__}; return a Response, a dict or a str")
    return {"status": out.status, "headers": out.headers.items(), "body": out.text()}


def _effect_key(method: str, args: list) -> str:
    """What names an outbound call as an effect, so that ``check`` calls the same call made twice a
    duplicate and two different calls two effects: a fetch's URL, with a digest of its body when it
    has one (two POSTs of different batches to one URL are two effects); a method's name otherwise."""
    if method != "fetch" or not args or not isinstance(args[0], dict):
        return method
    url, body = args[0].get("url"), args[0].get("body")
    if not body:
        return url
    return f"{url} #{hashlib.sha256(str(body).encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
