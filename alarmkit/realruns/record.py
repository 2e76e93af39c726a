"""``alarmkit record``: run your own Durable Object class on local workerd, journaled.

The class is wrapped by ``js/recorded.js`` (``recorded(MyClass)``), which writes the log-line
convention; a tail worker (``js/tail.js``, configured as ``tails`` and ``streamingTails`` in the
workerd config, as workerd's ``samples/tail-workers`` do) forwards every TraceItem and streaming
tail event to a collector in this process; the TraceItems are imported as one run
(``importer.import_records``), so figures, reports and ``check_run`` read it like a simulated run.

The driving script is JSON: ``{"steps": [{"at_ms": 0, "object": "ledger-1", "method": "grant",
"args": ["lease-1", 1000], "owes": {"effect": "revoke", "key": "lease-1", "after_ms": 1000}}, ...],
"until_ms": 5000}``: each step calls ``method(*args)`` on the object named ``object`` (by RPC) at
``at_ms`` after the start; recording stops ``until_ms`` after the start. ``owes`` declares the
obligation the call creates (checked by ``RecordResult.check()``): due ``after_ms`` after the time
just before the call, or, with ``"due": "returned"``, at the epoch ms the call returned.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AlarmkitError
from .importer import ImportResult, import_records

__all__ = ["record", "RecordResult", "load_script", "JS_DIR", "LAB_DIR"]

JS_DIR = Path(__file__).resolve().parent / "js"
LAB_DIR = JS_DIR / "lab"
_IDENT = __import__("re").compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")

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
      return Response.json({ ok: false, error: String(e), now: Date.now() });
    }
  },
};
"""


@dataclass
class RecordResult:
    """What ``record`` made: the import (rows, anomalies), the raw files, the obligations, the run id."""

    imported: ImportResult
    tail_path: Path
    stream_path: Path
    obligations: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)
    horizon_ms: int | None = None

    @property
    def run_id(self) -> int | None:
        return self.imported.run_id

    def check(self, **kw: Any):
        """``invariants.check_run`` over the recorded events, the obligations and the horizon."""
        from ..journal.invariants import check_run
        from ..journal import rows_to_frame

        return check_run(rows_to_frame(self.run_id, self.imported.rows), self.obligations, self.horizon_ms, **kw)


def load_script(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise AlarmkitError(f"no driving script {p}; write JSON like "
                            '{"steps": [{"at_ms": 0, "object": "a", "method": "grant", "args": ["x", 1000]}], "until_ms": 5000}')
    try:
        script = json.loads(p.read_text(encoding="utf-8"))
    except ValueError as err:
        raise AlarmkitError(f"driving script {p} is not JSON ({err})") from None
    return check_script(script, str(p))


def check_script(script: Any, name: str = "script") -> dict:
    if not isinstance(script, dict) or not isinstance(script.get("steps"), list) or not script["steps"]:
        raise AlarmkitError(f"{name} needs a non-empty list 'steps'")
    until = script.get("until_ms")
    if isinstance(until, bool) or not isinstance(until, int) or not 0 < until <= 3_600_000:
        raise AlarmkitError(f"{name}: until_ms must be a whole number of ms in 1..3600000, got {until!r}")
    last = 0
    for i, s in enumerate(script["steps"]):
        if not isinstance(s, dict) or not isinstance(s.get("object"), str) or not isinstance(s.get("method"), str):
            raise AlarmkitError(f"{name}: step {i} needs 'object' and 'method' strings, got {s!r}")
        at = s.get("at_ms", 0)
        if isinstance(at, bool) or not isinstance(at, int) or not last <= at <= until:
            raise AlarmkitError(f"{name}: step {i} at_ms must be a whole number in {last}..{until} "
                                f"(steps in time order, before until_ms), got {at!r}")
        last = at
    return script


def record(worker: str | Path, class_name: str, script: dict | str | Path, journal: Any = None, *,
           out_dir: str | Path | None = None, binary: str | None = None, settle_s: float = 1.5,
           scenario: str | None = None) -> RecordResult:
    """Run ``class_name`` from ``worker`` (one ES module file) on local workerd under ``script``."""
    from ..calibrate.workerd import DEFAULT_COMPAT_DATE, WorkerdError, find_workerd, free_port, http_get_json

    src = Path(worker)
    if not src.is_file():
        raise AlarmkitError(f"no worker file {src}; pass the path of your ES module, e.g. --worker src/worker.js")
    if not _IDENT.match(class_name):
        raise AlarmkitError(f"--class must be a JavaScript class name, got {class_name!r}")
    if f"class {class_name}" not in src.read_text(encoding="utf-8") and class_name not in src.read_text(encoding="utf-8"):
        raise AlarmkitError(f"{src} does not mention class {class_name}; export it (export class {class_name} ...)")
    script = load_script(script) if not isinstance(script, dict) else check_script(script)
    binary = binary or find_workerd()
    if not binary:
        raise WorkerdError("workerd not found; run `alarmkit calibrate --install-only` or set ALARMKIT_WORKERD")
    work = Path(tempfile.mkdtemp(prefix="alarmkit-record-"))
    out = Path(out_dir) if out_dir else work
    out.mkdir(parents=True, exist_ok=True)
    tail_path, stream_path = out / "tail.jsonl", out / "stream.jsonl"
    collector = _Collector(tail_path, stream_path)
    proc = None
    calls: list[dict] = []
    obligations: list[dict] = []
    try:
        shutil.copyfile(src, work / "user.js")
        shutil.copyfile(JS_DIR / "recorded.js", work / "recorded.js")
        shutil.copyfile(JS_DIR / "tail.js", work / "tail.js")
        (work / "entry.js").write_text(_ENTRY.replace("@CLASS@", class_name), encoding="utf-8")
        (work / "do").mkdir()
        port = free_port()
        cfg = (_CONFIG.replace("@COLLECTOR@", str(collector.port)).replace("@STORAGE@", str(work / "do"))
               .replace("@PORT@", str(port)).replace("@COMPAT@", DEFAULT_COMPAT_DATE).replace("@CLASS@", class_name))
        (work / "config.capnp").write_text(cfg, encoding="utf-8")
        log = open(work / "workerd.log", "wb")
        proc = subprocess.Popen([binary, "serve", str(work / "config.capnp"), "--experimental"], cwd=work, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        _wait_healthy(proc, port, work, http_get_json)
        t0 = time.monotonic()
        for step in script["steps"]:
            _sleep_until(t0 + step.get("at_ms", 0) / 1000)
            r = _post(port, {"object": step["object"], "method": step["method"], "args": step.get("args", [])})
            calls.append({"step": step, "result": r})
            owes = step.get("owes")
            if owes and r.get("ok"):
                # "due": "returned": the call returned the due time (the object's own clock); else the
                # time just before the call plus after_ms (the object read its clock at or after it)
                due = (int(r["value"]) if owes.get("due") == "returned"
                       else int(r["before"]) + int(owes.get("after_ms", 0)))
                obligations.append({"object": step["object"], "effect": owes["effect"], "key": owes["key"],
                                    "due_ms": due, "since_ms": int(r["before"])})
        _sleep_until(t0 + script["until_ms"] / 1000)
        time.sleep(settle_s)  # the last tail events are posted after their invocation ends
        horizon = int(time.time() * 1000)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        collector.close()
    records = [json.loads(line) for line in tail_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not records:
        raise WorkerdError(f"the tail worker delivered no events; workerd log:\n{(work / 'workerd.log').read_text()[-3000:]}")
    imported = import_records(records, f"record:{class_name}")
    if journal is not None:
        params = {"recorded": {"worker": src.name, "class": class_name, "script": script, "obligations": obligations,
                               "horizon_ms": horizon},
                  "imported": {"file": tail_path.name, "format": "tail", "anomalies": [str(a) for a in imported.anomalies],
                               "cannot": imported.cannot, "pending": imported.pending,
                               "first_ms": imported.summary["first_ms"]}}
        from ..calibrate.workerd import workerd_version

        try:
            version = workerd_version(binary)
        except Exception:  # noqa: BLE001 - the version only names the profile
            version = "unknown"
        run_id = journal.start_run(scenario or f"record:{class_name}", f"workerd-real@{version}", 0, params)
        journal.write_events(run_id, imported.rows)
        imported.run_id = run_id
    if out_dir is None:
        keep = Path(tempfile.mkdtemp(prefix="alarmkit-record-out-"))
        tail_path = Path(shutil.copy(tail_path, keep))
        stream_path = Path(shutil.copy(stream_path, keep))
        shutil.rmtree(work, ignore_errors=True)
    return RecordResult(imported, tail_path, stream_path, obligations, calls, horizon)


def _wait_healthy(proc, port: int, work: Path, get) -> None:
    from ..calibrate.workerd import WorkerdError

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise WorkerdError(f"workerd exited with {proc.returncode} at startup:\n"
                               f"{(work / 'workerd.log').read_text(errors='replace')[-3000:]}")
        try:
            if get(f"http://127.0.0.1:{port}/health", timeout=2.0).get("ok"):
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.05)
    raise WorkerdError(f"workerd did not answer within 30 s:\n{(work / 'workerd.log').read_text(errors='replace')[-3000:]}")


def _sleep_until(t: float) -> None:
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)


def _post(port: int, body: dict) -> dict:
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}/call", data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read().decode())


class _Collector:
    """A local HTTP server the tail worker posts to; appends one JSON object per line."""

    def __init__(self, tail_path: Path, stream_path: Path) -> None:
        lock = threading.Lock()
        files = {"/tail": open(tail_path, "w", encoding="utf-8"), "/stream": open(stream_path, "w", encoding="utf-8")}
        self.files = files

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                f = files.get(self.path)
                if f is not None:
                    with lock:
                        for item in json.loads(body):
                            f.write(json.dumps(item, separators=(",", ":")) + "\n")
                        f.flush()
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="alarmkit-collector", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for f in self.files.values():
            f.close()
