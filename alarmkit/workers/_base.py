"""What every loaded worker is, whatever its language: ``Worker`` (the handle ``Simulation.load_worker``
returns), and the HTTP values crossing into and out of it, ``Headers``, ``Request`` and ``Response``.

The Python host (``alarmkit.workers.python``) and the JavaScript host (``alarmkit.workers.js``) subclass
``Worker`` and implement ``_dispatch(request)`` (and may override ``methods``); everything else here is
shared, so the drive scripts, the CLI and the explorer see one interface.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator
from urllib.parse import urljoin, urlsplit

from ..errors import WorkerError, WorkerUnsupported

__all__ = ["Headers", "Request", "Response", "Worker", "BASE_URL", "RefusedBinding", "Var", "journal_refusal", "REFUSAL_CHARS"]

# a path alone ("/touch?id=a") is resolved against this, as wrangler dev's default origin would be
BASE_URL = "http://localhost/"
MAX_BODY = 1 << 24  # 16 MiB: a body bigger than this from a drive script is a mistake, not a request


def _text(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise WorkerError(f"{what} must be text, got {type(value).__name__} {value!r:.60}")
    return value


class Headers:
    """Case-insensitive HTTP headers, in insertion order (``get``, ``set``, ``has``, ``items``, ``[name]``)."""

    def __init__(self, init: Any = None) -> None:
        self._h: dict[str, tuple[str, str]] = {}
        if init is None:
            return
        if isinstance(init, Headers):
            init = init.items()
        elif isinstance(init, dict):
            init = init.items()
        for k, v in init:
            self.set(k, v)

    def set(self, name: str, value: Any) -> None:
        name = _text("a header name", name)
        self._h[name.lower()] = (name, str(value))

    def append(self, name: str, value: Any) -> None:
        old = self.get(name)
        self.set(name, value if old is None else f"{old}, {value}")

    def get(self, name: str, default: Any = None) -> Any:
        hit = self._h.get(str(name).lower())
        return default if hit is None else hit[1]

    def has(self, name: str) -> bool:
        return str(name).lower() in self._h

    def delete(self, name: str) -> None:
        self._h.pop(str(name).lower(), None)

    def items(self) -> list[tuple[str, str]]:
        return [(k, v) for k, (_, v) in self._h.items()]

    def keys(self) -> list[str]:
        return list(self._h)

    def __getitem__(self, name: str) -> str:
        hit = self._h.get(str(name).lower())
        if hit is None:
            raise KeyError(name)
        return hit[1]

    def __contains__(self, name: object) -> bool:
        return str(name).lower() in self._h

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.items())

    def __len__(self) -> int:
        return len(self._h)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and self.items() == other.items()

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        data = body
    elif isinstance(body, (bytearray, memoryview)):
        data = bytes(body)
    elif isinstance(body, str):
        data = body.encode("utf-8", "surrogatepass")
    else:
        raise WorkerError(f"a body is text or bytes, got {type(body).__name__}; pass json.dumps(value) for JSON")
    if len(data) > MAX_BODY:
        raise WorkerError(f"a body of {len(data):,} bytes is past the limit of {MAX_BODY:,}; send a smaller one")
    return data


class Request:
    """An HTTP request into a worker: ``url``, ``method``, ``headers`` and the body (``body`` bytes)."""

    def __init__(self, url: str, method: str = "GET", headers: Any = None, body: Any = None) -> None:
        url = _text("a request url", url)
        if not urlsplit(url).scheme:
            url = urljoin(BASE_URL, url)
        if urlsplit(url).scheme not in ("http", "https"):
            raise WorkerError(f"a request url is http(s) or a path such as '/touch', got {url!r:.80}")
        self.url = url
        self.method = _text("a request method", method).upper()
        self.headers = Headers(headers)
        self.body = _body_bytes(body)

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def text_now(self) -> str:
        return self.body.decode("utf-8", "replace")

    def text(self) -> str:
        """The body as text (for a Python handler stubbing a binding's ``fetch``: it is already here)."""
        return self.text_now()

    def json(self) -> Any:
        """The body parsed as JSON; WorkerError naming the start of the body when it is not JSON."""
        try:
            return json.loads(self.text_now())
        except ValueError:
            raise WorkerError(f"the request body is not JSON: {self.text_now()[:60]!r}") from None

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.url}>"


class Response:
    """What ``Worker.fetch`` returns: ``status``, ``headers``, ``body`` (bytes), ``text()``, ``json()``."""

    def __init__(self, body: Any = None, status: int = 200, headers: Any = None) -> None:
        if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 599:
            raise WorkerError(f"a response status is an int in 200..599, got {status!r}")
        self.status = status
        self.headers = Headers(headers)
        self.body = _body_bytes(body)

    @property
    def ok(self) -> bool:
        return 200 <= self.status <= 299

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; WorkerError naming the start of the body when it is not JSON."""
        try:
            return json.loads(self.text())
        except ValueError:
            raise WorkerError(f"the response body is not JSON: {self.text()[:60]!r}") from None

    def __repr__(self) -> str:
        return f"<Response {self.status} {len(self.body)} bytes>"


class Worker:
    """A worker module loaded into a simulation (``Simulation.load_worker``).

    ``env``: its bindings (Durable Object namespaces with ``getByName``, ``idFromName``, ``get``; the
    stubs' methods return awaitables driven by ``sim.call``/``sim.spawn``). ``fetch(url, ...)`` calls the
    default entrypoint's ``fetch`` and returns a ``Response``. ``classes``: binding -> Durable Object class
    name. Subclasses implement ``_dispatch``."""

    language = "?"

    def __init__(self, sim: Any, path: str, env: Any, classes: dict[str, str], compatibility_date: str) -> None:
        self.sim = sim
        self.path = path
        self.env = env
        self.classes = dict(classes)
        self.compatibility_date = compatibility_date

    def fetch(self, url: str, method: str = "GET", headers: Any = None, body: Any = None) -> Response:
        """Send one request to the default entrypoint and drive the simulation until it answers."""
        return self.sim.call(self.request(url, method=method, headers=headers, body=body))

    def request(self, url: str, method: str = "GET", headers: Any = None, body: Any = None) -> Any:
        """The awaitable of one request (for ``sim.spawn``: requests in flight together); it gives a ``Response``."""
        return self._dispatch(url if isinstance(url, Request) else Request(url, method, headers, body))

    def _dispatch(self, request: Request) -> Any:  # pragma: no cover - each host implements it
        raise NotImplementedError

    def stub(self, binding: str, name: str) -> Any:
        """``env.BINDING.getByName(name)``, refused with the bindings there are when ``binding`` is none."""
        if binding not in self.classes:
            raise self._no_binding(binding)
        return getattr(self.env, binding).getByName(name)

    def _no_binding(self, binding: str) -> WorkerError:
        """The refusal of a binding the worker does not have, naming those it has and how to bind one."""
        return WorkerError(f"{self.path} has no Durable Object binding {binding!r}; its bindings: {sorted(self.classes)}; "
                           f"bind a class of the module to it with --bind {binding}=ClassName (bindings= in Python) "
                           "or in the wrangler file's durable_objects")

    def methods(self, binding: str) -> list[str] | None:
        """The RPC methods of ``binding``'s class (None: not known before a call, as for a JS class)."""
        return None

    def check_method(self, binding: str, method: str) -> None:
        """Refuse (``WorkerError``) a method ``binding``'s class does not have, naming those it has."""
        if binding not in self.classes:
            raise self._no_binding(binding)
        known = self.methods(binding)
        if known is not None and method not in known:
            raise WorkerError(f"{self.classes[binding]} (binding {binding}) has no method {method!r}; its methods: {known}")

    def __repr__(self) -> str:
        return f"<{self.language} worker {self.path} bindings={self.classes}>"


def names(values: Iterable[str]) -> str:
    """``a, b, c`` for messages."""
    return ", ".join(sorted(values)) or "none"


class RefusedBinding:
    """A binding the simulation cannot run (a KV namespace, an R2 bucket, a queue...): touching it raises
    ``WorkerUnsupported`` naming it and how to stub it."""

    def __init__(self, name: str, what: str) -> None:
        self._name, self._what = name, what

    def _refuse(self, attr: str = "") -> WorkerUnsupported:
        use = f"env.{self._name}.{attr}" if attr else f"env.{self._name}"
        return WorkerUnsupported(
            f"{use}: {self._name} is a {self._what}, which alarmkit does not simulate; stub it with "
            f"load_worker(..., bindings={{{self._name!r}: my_fake}}) (any Python object with the methods your code calls)")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self._refuse(attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse()

    def __repr__(self) -> str:
        return f"<refused binding {self._name}: {self._what}>"


class Var:
    """A wrangler ``vars`` value on its way to ``env`` (so a host tells it from a class name)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Var({self.value!r})"


class Env:
    """A worker's ``env`` as Python sees it (both hosts): namespaces, ``vars``, the Python objects given as bindings, and the refused
    bindings (touching one raises ``WorkerUnsupported`` naming it)."""

    def __init__(self, bindings: dict[str, Any]) -> None:
        self.__dict__.update(bindings)

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"env has no binding {name!r} (its bindings: {names(self.__dict__)}); add it in "
                             f"wrangler.jsonc or load_worker(..., bindings={{{name!r}: ...}})")

    def __repr__(self) -> str:
        return f"<env {sorted(self.__dict__)}>"


REFUSAL_CHARS = 1000  # a refusal's text in its journal event is cut to this


def journal_refusal(sim: Any, host: Any, err: Any) -> None:
    """The one home of a refusal's journal event (both hosts): a ``refused`` event about ``host``'s object
    (None: the whole run, e.g. at the module's import) at the virtual time now, its detail the refusal's
    text, cut. ``err``: a ``WorkerUnsupported`` (journaled once, however many hosts notice it) or its text."""
    if isinstance(err, BaseException):
        if getattr(err, "_alarmkit_journaled", False):
            return
        try:
            err._alarmkit_journaled = True  # type: ignore[attr-defined]
        except AttributeError:
            pass
        err = str(err)
    text = str(err)
    if len(text) > REFUSAL_CHARS:
        text = text[:REFUSAL_CHARS - 1] + "…"
    sim.log("refused", host, None, None, None, {"text": text})
