"""Drive scripts: requests into a worker at virtual times, one small format for Python and JS workers.

A drive script is JSON (``.json``) or TOML (``.toml``), never evaluated::

    {"steps": [
        {"at": 0,      "fetch": "/touch?id=a", "method": "POST", "body": "hi", "headers": {"x-k": "v"}},
        {"after": 500, "call": "SESSIONS", "name": "a", "method": "touch", "args": [1]},
        {"at": 61000,  "restart": 1000},
        {"at": 90000,  "evict": "SESSIONS", "name": "a"}
     ],
     "until": 120000,
     "expect": [{"object": "SESSIONS:a", "kv": "n", "equals": 1}]}

Each step happens at ``at`` (ms since the simulation's start) or ``after`` ms past the previous step
(``after: 0`` when neither is given); times never go back. ``fetch`` sends a request to the default
entrypoint (a path, or an http(s) URL); ``call`` is an RPC ``env.BINDING.getByName(name).method(*args)``;
``restart`` takes the runtime down for that many ms; ``evict`` drops an object's instance. Requests and
calls start at their time and run concurrently with what is in flight. ``retries`` (default 0) and
``retry_after`` (ms, default 100) make a request or call a client that tries again when it fails (an
error, or a status of 500 or more), as a real client of a worker would. After the last step the simulation
runs until ``until`` (ms since the start) or, without it, until nothing is left to do. Every bad field is
a ``DriveError`` naming the step and the field, before anything runs; so is a ``call`` naming a binding
or method the worker does not have. ``expect`` (optional) states what must hold at the end (``_expect``);
each failure is journaled as ``expect_failed``, a violation of the ``expect`` invariant.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError, DriveError

# what a call step cannot call (workerd's RPC never reaches the reserved names, worker-rpc.c++ isReservedName;
# an object's fetch takes a Request, which JSON args cannot make) -> why, and the way out
_RESERVED = "workerd reserves it: no RPC reaches it"
_PLATFORM = f"{_RESERVED}; the platform calls it, and a call step calls one of the class's own methods"
RESERVED = {"alarm": f"{_RESERVED}; alarm() runs when an alarm set with ctx.storage.setAlarm(...) falls due",
            "fetch": "an object's fetch() takes a Request, which JSON args cannot make; a fetch step calls the "
                     "worker's fetch, which may forward the request to the object",
            "constructor": f"{_RESERVED}; the object is constructed on its first call",
            "dup": f"{_RESERVED}; stub.dup() copies the stub itself", "connect": _PLATFORM,
            "webSocketMessage": _PLATFORM, "webSocketClose": _PLATFORM, "webSocketError": _PLATFORM}
from ._expect import check_expect, parse_expect

__all__ = ["DriveScript", "DriveResult", "load_drive", "parse_drive", "run_drive", "MAX_STEPS"]

MAX_STEPS = 100_000  # steps one script may hold: a drive script is written by hand or a small generator
MAX_FILE = 1 << 24
MAX_MS = 2**53
KINDS = ("fetch", "call", "restart", "evict")
FIELDS = {
    "fetch": {"fetch", "method", "headers", "body", "at", "after", "retries", "retry_after"},
    "call": {"call", "name", "method", "args", "at", "after", "retries", "retry_after", "owes"},  # owes: record's
    "restart": {"restart", "at", "after"},
    "evict": {"evict", "name", "at", "after"},
}


@dataclass
class DriveScript:
    """Parsed steps (each a dict with ``kind`` and ``t``: ms since the start) and ``until`` (or None)."""

    steps: list[dict]
    until: int | None = None
    source: str = "<drive>"
    expect: list[dict] = field(default_factory=list)

    def check(self, worker: Any) -> None:
        """Refuse (``DriveError``) a call to a binding or method ``worker`` does not have."""
        for i, s in enumerate(self.steps):
            if s["kind"] in ("call", "evict") or s.get("binding"):
                try:
                    worker.check_method(s["binding"], s["method"]) if s["kind"] == "call" else worker.stub(s["binding"], s["name"])
                except AlarmkitError as err:
                    raise DriveError(f"{self.source}: step {i + 1}: {err}") from None
        for i, e in enumerate(self.expect):
            if "binding" in e:
                try:
                    worker.stub(e["binding"], e["name"])
                except AlarmkitError as err:
                    raise DriveError(f"{self.source}: expect {i + 1}: {err}") from None


@dataclass
class DriveResult:
    """What a drive did: ``outcomes`` (one dict per request or call: ``step``, ``t_ms``, ``what``, and
    ``status``/``value`` when it finished, ``error`` when it failed, ``done_ms``; ``pending`` True when
    the run ended first), ``end_ms``, ``skipped`` (a restart step that found the runtime down already, as
    a fault plan's restart can leave it under ``explore --worker``: one line each)."""

    outcomes: list[dict] = field(default_factory=list)
    end_ms: int = 0
    expect_failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # steps that could not happen, each saying why

    @property
    def pending(self) -> list[dict]:
        return [o for o in self.outcomes if o.get("pending")]

    @property
    def failed(self) -> list[dict]:
        return [o for o in self.outcomes if "error" in o]


def _ms(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MS:
        raise DriveError(f"{where}: {key} must be whole milliseconds in 0..2**53, got {json.dumps(value, default=repr)[:60]}")
    return value


def _str(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise DriveError(f"{where}: {key} must be non-empty text, got {json.dumps(value, default=repr)[:60]}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise DriveError(f"{where}: {key} is not valid text (a lone surrogate): {value!r:.60}") from None
    return value


def parse_drive(data: Any, source: str = "<drive>") -> DriveScript:
    """A ``DriveScript`` from already-loaded data (a dict as the file holds); ``DriveError`` when malformed."""
    if not isinstance(data, dict):
        raise DriveError(f"{source}: a drive script is a table with \"steps\", got {type(data).__name__}")
    extra = sorted(set(map(str, data)) - {"steps", "until", "expect"})
    if extra:
        raise DriveError(f"{source}: unknown key {extra[0]!r}; a drive script has \"steps\", and optionally "
                         "\"until\" and \"expect\"")
    raw = data.get("steps")
    if not isinstance(raw, list) or not raw:
        raise DriveError(f"{source}: \"steps\" must be a non-empty list of steps (see docs/workers.md, drive scripts)")
    if len(raw) > MAX_STEPS:
        raise DriveError(f"{source}: {len(raw):,} steps, past the limit of {MAX_STEPS:,}; split the script")
    steps, t = [], 0
    for i, s in enumerate(raw):
        where = f"{source}: step {i + 1}"
        if not isinstance(s, dict):
            raise DriveError(f"{where} is a {type(s).__name__}, not a table")
        kinds = [k for k in KINDS if k in s]
        if len(kinds) != 1:
            raise DriveError(f"{where} needs exactly one of {', '.join(KINDS)}, got {sorted(map(str, s))[:6]}")
        kind = kinds[0]
        unknown = sorted(set(map(str, s)) - FIELDS[kind])
        if unknown:
            raise DriveError(f"{where}: unknown field {unknown[0]!r} for a {kind} step; it takes {sorted(FIELDS[kind])}")
        if "at" in s and "after" in s:
            raise DriveError(f"{where}: give at (ms since the start) or after (ms past the previous step), not both")
        if "at" in s:
            at = _ms(where, "at", s["at"])
            if at < t:
                raise DriveError(f"{where}: at={at} is before the previous step's time {t}; steps go forward in time")
            t = at
        else:
            t = _ms(where, "after", t + _ms(where, "after", s.get("after", 0)))
        step: dict[str, Any] = {"kind": kind, "t": t}
        if kind == "fetch":
            step["url"] = _str(where, "fetch", s["fetch"])
            step["method"] = _str(where, "method", s.get("method", "GET"))
            headers = s.get("headers", {})
            if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
                raise DriveError(f"{where}: headers must be a table of names to text values")
            step["headers"] = {_str(where, "a header name", k): v for k, v in headers.items()}
            body = s.get("body")
            if body is not None and not isinstance(body, str):
                raise DriveError(f"{where}: body must be text (JSON as a string), got {type(body).__name__}")
            step["body"] = body
        elif kind == "call":
            step["binding"] = _str(where, "call (the binding)", s["call"])
            step["name"] = _str(where, "name", s.get("name"))
            step["method"] = _str(where, "method", s.get("method"))
            if step["method"].startswith("_"):
                raise DriveError(f"{where}: method {step['method']!r} is private; RPC reaches public methods only")
            if step["method"] in RESERVED:  # JsObject.alarm() missing 1 required positional argument, before
                raise DriveError(f"{where}: method {step['method']!r} cannot be a call step: {RESERVED[step['method']]}")
            args = s.get("args", [])
            if not isinstance(args, list):
                raise DriveError(f"{where}: args must be a list, got {type(args).__name__}")
            step["args"] = args
        elif kind == "restart":
            step["downtime"] = _ms(where, "restart (the downtime)", s["restart"])
        else:
            step["binding"] = _str(where, "evict (the binding)", s["evict"])
            step["name"] = _str(where, "name", s.get("name"))
        if kind in ("fetch", "call"):
            step["retries"] = s.get("retries", 0)
            if isinstance(step["retries"], bool) or not isinstance(step["retries"], int) or not 0 <= step["retries"] <= 100:
                raise DriveError(f"{where}: retries must be a whole number in 0..100, got {json.dumps(step['retries'], default=repr)[:40]}")
            step["retry_after"] = _ms(where, "retry_after", s.get("retry_after", 100))
        steps.append(step)
    until = data.get("until")
    if until is not None:
        until = _ms(f"{source}: until", "until", until)
        if until < t:
            raise DriveError(f"{source}: until={until} is before the last step ({t} ms); raise it or drop it")
    expect = parse_expect(data["expect"], source) if "expect" in data else []
    return DriveScript(steps, until, source, expect)


def load_drive(path: str | Path) -> DriveScript:
    """Read a drive script file (``.json`` or ``.toml``); ``DriveError`` naming the file and the fault."""
    p = Path(path)
    if not p.is_file():
        raise DriveError(f"no drive script {str(p)!r}; write one (docs/workers.md, drive scripts) and pass its path")
    if p.stat().st_size > MAX_FILE:
        raise DriveError(f"{p} is {p.stat().st_size:,} bytes, past the {MAX_FILE:,} a drive script may be")
    try:
        text = p.read_text("utf-8")
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        kind = "TOML" if p.suffix == ".toml" else "JSON"
        raise DriveError(f"{p} is not a {kind} drive script: {str(err)[:160]}") from None
    return parse_drive(data, str(p))


def run_drive(worker: Any, drive: DriveScript) -> DriveResult:
    """Run ``drive`` against ``worker`` in its simulation (checked first: ``DriveError``); return what
    each request did. A request that fails is an outcome (its ``error``), not an exception; one still
    running when the run ends is ``pending``."""
    drive.check(worker)
    sim = worker.sim
    start = sim.now
    result = DriveResult()

    def launch(i: int, step: dict, out: dict | None = None) -> None:
        kind = step["kind"]
        if kind == "restart":
            if sim.down:  # a fault plan's restart (explore --worker) took it down first: as a plan's restart
                # that finds the runtime down is skipped, so is the drive's, and the run says so
                result.skipped.append(f"step {i + 1}: restart at {sim.now - start} ms ({step['downtime']} ms down) "
                                      "skipped: the runtime was already down (a fault plan's restart)")
                return
            sim.restart(step["downtime"])
            return
        if kind == "evict":
            sim.evict(_raw_stub(worker, step))
            return
        if kind == "fetch":
            what = f"{step['method']} {step['url']}"
            aw = worker.request(step["url"], method=step["method"], headers=step["headers"], body=step["body"])
        else:
            what = f"{step['binding']}:{step['name']}.{step['method']}"
            aw = getattr(worker.stub(step["binding"], step["name"]), step["method"])(*step["args"])
        if out is None:
            out = {"step": i + 1, "t_ms": sim.now - start, "what": what, "pending": True, "attempts": 0}
            result.outcomes.append(out)
        out["attempts"] += 1
        task = sim.spawn(aw, f"drive:{what}")

        def done(t: Any) -> None:
            err = t.exception()
            failed = err is not None or (kind == "fetch" and t.result().status >= 500)
            if failed and out["attempts"] <= step["retries"]:
                sim.call_at(sim.now + step["retry_after"], launch, i, step, out)
                return
            out.pop("pending")
            out["done_ms"] = sim.now - start
            if err is not None:
                out["error"] = f"{type(err).__name__}: {err}"
            elif kind == "fetch":
                out["status"] = t.result().status
                out["body"] = t.result().text()[:200]
            else:
                out["value"] = t.result()

        task.add_done_callback(done)

    for i, step in enumerate(drive.steps):
        sim.call_at(start + step["t"], launch, i, step)
    sim.run(None if drive.until is None else start + drive.until)
    result.end_ms = sim.now - start
    result.expect_failures = check_expect(worker, drive.expect, result, _still_set(sim, drive, start))
    return result


def _still_set(sim: Any, drive: DriveScript, start: int) -> str:
    """Said after each failed expectation when the drive's ``until`` ended the run with alarms still set:
    the work may only have been late, not lost."""
    left = sorted((v - start, k) for k, v in sim.alarms().items() if v is not None)
    if drive.until is None or not left:
        return ""
    named = ", ".join(f"{k} (set for {t} ms)" for t, k in left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    return f" (the drive's until, {drive.until} ms, ended the run with alarms still pending: {named})"


def _raw_stub(worker: Any, step: dict) -> Any:
    """The simulation's own stub behind a worker's stub (what ``sim.evict`` takes)."""
    stub = worker.stub(step["binding"], step["name"])
    return getattr(stub, "_stub", stub)
