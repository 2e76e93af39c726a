"""``alarmkit record``: run your own Durable Object class on local workerd, journaled.

The class is wrapped by ``js/recorded.js`` (``recorded(MyClass)``), which writes the log-line
convention; a tail worker (``js/tail.js``, configured as ``tails`` and ``streamingTails`` in the
workerd config, as workerd's ``samples/tail-workers`` do) forwards every TraceItem and streaming
tail event to a collector in this process; the TraceItems are imported as one run
(``importer.import_records``), so figures, reports and ``check_run`` read it like a simulated run.

The drive is the one drive format of ``alarmkit worker`` and ``explore --worker`` (``workers/drive.py``):
``{"steps": [{"at": 0, "call": "LEDGER", "name": "ledger-1", "method": "grant", "args": ["lease-1", 1000],
"owes": {"effect": "revoke", "key": "lease-1", "after_ms": 1000}}, ...], "until": 5000}``: each step calls
``method(*args)`` on the object named ``name`` (by RPC) at ``at`` (or ``after`` the previous step) ms after
the start; recording stops ``until`` ms after the start. ``call`` names a binding, as in the simulator;
record binds the one class it runs, so only ``call`` steps are taken (``fetch``, ``restart``, ``evict`` and
``expect`` are refused by name). The old record script (``at_ms``, ``object``, ``until_ms``) still reads,
with a note on stderr (``load_script``). ``owes`` declares the
obligation the call creates (checked by ``RecordResult.check()``): due ``after_ms`` after the
moment the object's own clock read when the call reached it (the recorder's ``call`` line: in workerd
``Date.now()`` does not move while a method runs until it does I/O, so that is the time the method
itself reads), or, with ``"due": "returned"``, at the epoch ms the call returned. A call that fails
(a typo in the method name, a constructor that throws) is counted, and the obligation it carried is
reported failed (``call_failed``), never silently dropped.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError
from .importer import ImportResult, import_records, journal_run
from .due import obligations as _obligations
from .rawfiles import check_out, keep_raw
from .drives import MAX_STEPS, check_text, from_drive, is_old_script, violation_text  # noqa: F401  (their old home)
from .recproc import Collector, Session, check_worker, sigterm_raises
from .._text import clean

__all__ = ["record", "RecordResult", "load_script", "check_script", "JS_DIR", "LAB_DIR", "STEP_TIMEOUT_S"]

JS_DIR = Path(__file__).resolve().parent / "js"
LAB_DIR = JS_DIR / "lab"
_IDENT = __import__("re").compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
STEP_TIMEOUT_S = 30.0  # a call that has not returned by then is named and the recording stopped

_CONFIG = """using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .main),
    (name = "tail", worker = .tail),
    (name = "collector", external = (address = "127.0.0.1:@COLLECTOR@", http = ())),
    (name = "do-disk", disk = (path = "@STORAGE@", writable = true)),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:@PORT@", http = (), service = "main") ],
);
const main :Workerd.Worker = (
  modules = [
    (name = "entry.js", esModule = embed "entry.js"),
    (name = "user.js", esModule = embed "user.js"),
    (name = "recorded.js", esModule = embed "recorded.js"),
  ],
  compatibilityDate = "@COMPAT@",
  durableObjectNamespaces = [ (className = "@CLASS@", uniqueKey = "alarmkit-record-@CLASS@", enableSql = true) ],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [ (name = "NS", durableObjectNamespace = "@CLASS@") ],
  tails = ["tail"],
  streamingTails = ["tail"],
);
const tail :Workerd.Worker = (
  modules = [ (name = "tail.js", esModule = embed "tail.js") ],
  compatibilityDate = "@COMPAT@",
  bindings = [ (name = "COLLECTOR", service = "collector") ],
);
"""

_ENTRY = """import * as user from "./user.js";
import { recorded } from "./recorded.js";
const Base = user.@CLASS@;
export class @CLASS@ extends (Base.__alarmkitRecorded ? Base : recorded(Base)) {}
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    if (u.pathname === "/health") return Response.json({ ok: true, now: Date.now() });
    const { object, method, args } = await req.json();
    const before = Date.now();
    try {
      const stub = env.NS.get(env.NS.idFromName(object));
      return Response.json({ ok: true, value: await stub[method](...(args || [])) ?? null, before, now: Date.now() });
    } catch (e) {
      return Response.json({ ok: false, error: String(e), before, now: Date.now() });
    }
  },
};
"""


@dataclass
class RecordResult:
    """What ``record`` made: the import (rows, anomalies), the raw files (None unless ``out_dir``),
    the obligations, every call with its result, the run id."""

    imported: ImportResult
    tail_path: Path | None
    stream_path: Path | None
    obligations: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)
    horizon_ms: int | None = None
    due_from: list[str] = field(default_factory=list)  # per obligation: "object clock" | "entry worker" | "returned"

    @property
    def run_id(self) -> int | None:
        return self.imported.run_id

    @property
    def failed_calls(self) -> list[dict]:
        return [c for c in self.calls if not c["result"].get("ok")]

    def call_summary(self) -> dict:
        failed = self.failed_calls
        return {"made": len(self.calls), "failed": len(failed),
                "failed_list": [{"step": c["index"], "object": c["step"]["object"], "method": c["step"]["method"],
                                 "error": c["result"].get("error"), "owes": c["step"].get("owes")} for c in failed]}

    def check(self, **kw: Any):
        """``invariants.check_run`` over the recorded events, the obligations and the horizon, plus a
        ``call_failed`` violation for each failed call that carried an obligation (its effect was owed
        and the call that would create it never ran)."""
        from ..journal.invariants import Violation, check_run
        from ..journal import rows_to_frame

        report = check_run(rows_to_frame(self.run_id, self.imported.rows), self.obligations, self.horizon_ms, **kw)
        for c in self.calls:
            if c.get("due_error"):
                step = c["step"]
                report.violations.append(Violation("due_unreadable", step["object"], c["result"].get("now"),
                                                   f"step {c['index']} {c['due_error']}", step["owes"].get("key")))
        for c in self.failed_calls:
            owes, step = c["step"].get("owes"), c["step"]
            if owes:
                report.violations.append(Violation(
                    "call_failed", step["object"], c["result"].get("now"),
                    f"step {c['index']} {step['method']}() failed ({c['result'].get('error')}); the obligation it "
                    f"carries, {owes.get('effect')}({json.dumps(owes.get('key'), default=str)}), was never created", owes.get("key")))
            else:
                report.notes.append(f"step {c['index']} {step['method']}() failed ({c['result'].get('error')})")
        report.violations.sort(key=lambda v: (v.t_ms if v.t_ms is not None else -1, v.invariant))
        return report

    def check_lines(self, report=None) -> list[str]:
        """The CLI's lines after the import summary: calls, the check, its violations, the raw files."""
        report = report if report is not None else self.check()
        failed = self.failed_calls
        lines = [f"  calls: {len(self.calls)} made, {len(failed)} failed"]
        lines += [f"    step {c['index']} {c['step']['object']}.{c['step']['method']}(): {c['result'].get('error')}"
                  for c in failed]
        owed = sum(1 for c in self.calls if c["step"].get("owes"))
        note = "" if owed else "; no step declares an obligation ('owes'), so no obligation was checked"
        lines.append(f"  check: {check_text(report)}{note}")
        lines += [f"    ✗ {violation_text(v)}" for v in report.violations]
        if self.due_from.count("entry worker"):
            lines.append(f"  due times: {self.due_from.count('entry worker')} obligation(s) timed by the entry worker "
                         "(no recorder call line matched), up to a few ms early")
        if self.tail_path is not None:
            lines.append(f"  raw events: {self.tail_path}, {self.stream_path}")
        else:
            lines.append("  raw events: not kept (--out DIR keeps tail.jsonl and stream.jsonl)")
        return lines


def load_script(path: str | Path, notes: list[str] | None = None) -> dict:
    """Read a drive (``.json`` or ``.toml``) for ``record``: the drive format, or the old record script
    (a note naming the file is appended to ``notes``). Returns the checked script in record's own terms."""
    p = Path(path)
    if not p.is_file():
        raise AlarmkitError(f"no drive file {p}; write JSON like "
                            '{"steps": [{"at": 0, "call": "LEDGER", "name": "a", "method": "grant", "args": ["x", 1000]}], '
                            '"until": 5000}')
    try:
        text = p.read_bytes().decode("utf-8")
        script = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        kind = "TOML" if p.suffix == ".toml" else "JSON"
        raise AlarmkitError(f"drive {p} is not UTF-8 {kind} ({str(err)[:120]})") from None
    if is_old_script(script):
        if notes is not None:
            notes.append(f"{p} is in record's old script format (at_ms, object, until_ms): it still reads; the one "
                         "drive format of worker, explore and record says at, call, name and until (docs/real-runs.md)")
        return check_script(script, str(p))
    return check_script(from_drive(script, str(p)), str(p))


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _whole(v: Any, lo: int, hi: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and lo <= v <= hi


def check_script(script: Any, name: str = "script") -> dict:
    """Refuse a driving script alarmkit cannot run, before workerd starts, naming the step and field."""
    if not isinstance(script, dict) or not isinstance(script.get("steps"), list) or not script["steps"]:
        raise AlarmkitError(f"{name} needs a non-empty list 'steps'")
    if len(script["steps"]) > MAX_STEPS:
        raise AlarmkitError(f"{name} has {len(script['steps'])} steps; at most {MAX_STEPS}: split the recording")
    until = script.get("until_ms")
    if not _whole(until, 1, 3_600_000):
        raise AlarmkitError(f"{name}: until_ms must be a whole number of ms in 1..3600000, got {clean(repr(until))[:60]}")
    last = 0
    for i, s in enumerate(script["steps"]):
        if not isinstance(s, dict) or not isinstance(s.get("object"), str) or not isinstance(s.get("method"), str):
            raise AlarmkitError(f"{name}: step {i} needs 'object' and 'method' strings, got {clean(repr(s))[:80]}")
        if not _IDENT.match(s["method"]):
            raise AlarmkitError(f"{name}: step {i} method must be a JavaScript method name, got "
                                f"{clean(repr(s['method']))[:60]}")
        at = s.get("at_ms", 0)
        if not _whole(at, last, until):
            raise AlarmkitError(f"{name}: step {i} at_ms must be a whole number in {last}..{until} "
                                f"(steps in time order, before until_ms), got {clean(repr(at))[:60]}")
        if not isinstance(s.get("args", []), list):
            raise AlarmkitError(f"{name}: step {i} args must be a list, got {clean(repr(s.get('args')))[:60]}")
        if "owes" in s:
            _check_owes(s["owes"], f"{name}: step {i} owes")
        last = at
    return script


def _check_owes(owes: Any, where: str) -> None:
    if not isinstance(owes, dict) or not isinstance(owes.get("effect"), str) or "key" not in owes:
        raise AlarmkitError(f"{where} must be an object with 'effect' (text) and 'key', got {clean(repr(owes))[:80]}")
    due = owes.get("due")
    if due is not None and due != "returned":
        raise AlarmkitError(f"{where}.due must be \"returned\" (or left out, with after_ms), got {clean(repr(due))[:40]}")
    if due is None and not _whole(owes.get("after_ms", 0), 0, 10**10):
        raise AlarmkitError(f"{where}.after_ms must be whole ms in 0..10000000000, got "
                            f"{clean(repr(owes.get('after_ms')))[:40]}")
    unknown = sorted(set(owes) - {"effect", "key", "due", "after_ms", "max_late_ms"})
    if unknown:
        raise AlarmkitError(f"{where} has unknown field(s) {unknown}; known: effect, key, due, after_ms, max_late_ms")
    if owes.get("max_late_ms") is not None and not _whole(owes["max_late_ms"], 0, 10**10):
        raise AlarmkitError(f"{where}.max_late_ms must be whole ms >= 0, got {clean(repr(owes['max_late_ms']))[:40]}")


def record(worker: str | Path, class_name: str, script: dict | str | Path, journal: Any = None, *,
           out_dir: str | Path | None = None, binary: str | None = None, settle_s: float = 1.5,
           scenario: str | None = None, step_timeout_s: float = STEP_TIMEOUT_S) -> RecordResult:
    """Run ``class_name`` from ``worker`` (one ES module file) on local workerd under ``script``.

    Everything that can be refused is refused before workerd starts (the worker file, the class
    name, the script and its ``owes``, the ``out_dir`` files). workerd and the work folder never
    outlive the call (``recproc``). With ``journal`` the run is written and ended ``complete``.
    Raises ``AlarmkitError`` (``WorkerdError`` for workerd itself), or ``KeyboardInterrupt`` on
    Ctrl-C or SIGTERM after cleaning up.
    """
    from ..calibrate.workerd import DEFAULT_COMPAT_DATE, WorkerdError, find_workerd, free_port, http_get_json
    from .._files import write_text

    src = Path(worker)
    if not isinstance(class_name, str) or not _IDENT.match(class_name):
        raise AlarmkitError(f"--class must be a JavaScript class name, got {clean(repr(class_name))[:60]}")
    check_worker(src, class_name)
    script = load_script(script) if not isinstance(script, dict) else check_script(script)
    out = check_out(out_dir)
    binary = binary or find_workerd()
    if not binary:
        raise WorkerdError("workerd not found; run `alarmkit calibrate --install-only` or set ALARMKIT_WORKERD")
    calls: list[dict] = []
    with sigterm_raises("record"):
        session = Session()
        try:
            work = session.work
            tail_path, stream_path = work / "tail.jsonl", work / "stream.jsonl"
            collector = Collector(tail_path, stream_path)
            try:
                for name, text in (("user.js", src.read_text(encoding="utf-8")),
                                   ("recorded.js", (JS_DIR / "recorded.js").read_text(encoding="utf-8")),
                                   ("tail.js", (JS_DIR / "tail.js").read_text(encoding="utf-8")),
                                   ("entry.js", _ENTRY.replace("@CLASS@", class_name))):
                    write_text(work / name, text, ours=None)
                (work / "do").mkdir()
                port = free_port()
                cfg = (_CONFIG.replace("@COLLECTOR@", str(collector.port)).replace("@STORAGE@", str(work / "do"))
                       .replace("@PORT@", str(port)).replace("@COMPAT@", DEFAULT_COMPAT_DATE)
                       .replace("@CLASS@", class_name))
                write_text(work / "config.capnp", cfg, ours=None)
                proc = session.start_workerd(binary, work / "config.capnp", work / "workerd.log")
                _wait_healthy(proc, port, session, http_get_json)
                _drive(script, port, calls, step_timeout_s, session)
                time.sleep(settle_s)  # the last tail events are posted after their invocation ends
                horizon = int(time.time() * 1000)
            finally:
                session.stop_workerd()
                collector.close()
            records = _read_lines(tail_path)
            if not records:
                raise WorkerdError(f"the tail worker delivered no events; workerd log: {clean(session.log_tail())}")
            imported = import_records(records, f"record:{class_name}")
            obligations, due_from = _obligations(calls, imported.rows)
            kept = keep_raw(out, tail_path, stream_path) if out is not None else (None, None)
        finally:
            session.close()
    result = RecordResult(imported, kept[0], kept[1], obligations, calls, horizon, due_from)
    if journal is not None:
        from ..calibrate.workerd import workerd_version

        params = {"recorded": {"worker": src.name, "class": class_name, "script": script, "obligations": obligations,
                               "horizon_ms": horizon, "calls": result.call_summary(), "due_from": due_from},
                  "imported": {"file": "tail.jsonl", "format": "tail", "anomalies": [str(a) for a in imported.anomalies],
                               "cannot": imported.cannot, "pending": imported.pending,
                               "first_ms": imported.summary["first_ms"], "checks": imported.checks.to_dict()}}
        try:
            version = workerd_version(binary)
        except Exception:  # noqa: BLE001 - the version only names the profile
            version = "unknown"
        imported.run_id = journal_run(journal, scenario or f"record:{class_name}", f"workerd-real@{version}", params,
                                      imported.rows)
    return result


def _read_lines(path: Path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                v = json.loads(line)
                if isinstance(v, dict):
                    out.append(v)
    return out


def _drive(script: dict, port: int, calls: list[dict], step_timeout_s: float, session) -> None:
    """Make each step's call at its time; a call that does not return in time is named and stops the run."""
    from tqdm.auto import tqdm

    t0 = time.monotonic()
    with tqdm(total=len(script["steps"]), desc="record: steps", unit="step", disable=None, leave=False) as bar:
        for i, step in enumerate(script["steps"]):
            _sleep_until(t0 + step.get("at_ms", 0) / 1000)
            body = {"object": step["object"], "method": step["method"], "args": step.get("args", [])}
            try:
                r = _post(port, body, step_timeout_s)
            except TimeoutError:
                raise AlarmkitError(f"step {i} ({clean(step['object'])}.{step['method']}()) did not return within "
                                    f"{step_timeout_s:g} s; the recording was stopped: check that method (an await "
                                    "that never settles?)") from None
            except OSError as err:
                if session.proc is not None and session.proc.poll() is not None:
                    raise AlarmkitError(f"workerd exited during step {i} ({step['method']}()): "
                                        f"{clean(session.log_tail())}") from None
                r = {"ok": False, "error": f"no answer from workerd ({err})"}
            calls.append({"index": i, "step": step, "result": r})
            bar.update(1)
        _sleep_until(t0 + script["until_ms"] / 1000)


def _wait_healthy(proc, port: int, session, get) -> None:
    from ..calibrate.workerd import WorkerdError

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise WorkerdError(f"workerd exited with {proc.returncode} at startup: {clean(session.log_tail())}")
        try:
            if get(f"http://127.0.0.1:{port}/health", timeout=2.0).get("ok"):
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.05)
    raise WorkerdError(f"workerd did not answer within 30 s: {clean(session.log_tail())}")


def _sleep_until(t: float) -> None:
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)


def _post(port: int, body: dict, timeout: float) -> dict:
    import socket
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}/call", data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as err:
        return {"ok": False, "error": f"HTTP {err.code} from the entry worker"}
    except urllib.error.URLError as err:
        if isinstance(err.reason, (socket.timeout, TimeoutError)):
            raise TimeoutError from None
        raise OSError(str(err.reason)) from None
    except (socket.timeout, TimeoutError):
        raise TimeoutError from None
    try:
        r = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return {"ok": False, "error": f"the entry worker answered {raw[:80]!r}, not JSON"}
    return r if isinstance(r, dict) else {"ok": False, "error": "the entry worker answered JSON that is not an object"}
