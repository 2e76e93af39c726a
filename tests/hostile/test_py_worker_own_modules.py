"""A Python Worker's ``sys.modules`` names the modules its ``import`` gives it: its own ``sys``, ``signal``,
``os``, ``time``, ``builtins``... and its own modules. ``sys.modules['sys']`` was the process's ``sys``, so
``sys.modules['sys'].setrecursionlimit(50)`` changed the interpreter for alarmkit and every object (the
worker's own ``sys`` refuses it), ``sys.modules['sys'].stdout.close()`` closed the command's output (a
traceback instead of the run's JSON), and ``sys.modules[__name__]`` raised KeyError."""

from __future__ import annotations

import json
import textwrap

import pytest
from alarmkit.workers import run_worker

WORKER = '''
import asyncio, builtins, os, signal, sys, time
from workers import DurableObject

class W(DurableObject):
    async def go(self):
{body}
'''


def _run(tmp_path, body: str):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "entry.py").write_text(WORKER.format(body=textwrap.indent(body, " " * 8)))
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "call": "W", "name": "a", "method": "go"}],
                                                     "until": 1000}))
    r = run_worker(tmp_path / "src" / "entry.py", tmp_path / "drive.json", bindings={"W": "W"})
    return r["outcomes"][0]


@pytest.mark.parametrize("name", ["sys", "signal", "os", "time", "asyncio", "builtins"])
def test_sys_modules_holds_the_workers_own_module(tmp_path, name):
    out = _run(tmp_path, f"return sys.modules[{name!r}] is {name}")
    assert out.get("value") is True, out


def test_sys_modules_holds_the_workers_own_module_by_its_name(tmp_path):
    assert _run(tmp_path, "return sys.modules[__name__].W is W").get("value") is True


@pytest.mark.parametrize("body, refused", [
    ("sys.modules['sys'].setrecursionlimit(50)", "sys.setrecursionlimit(50) in the worker's code at "),
    ("sys.modules['signal'].alarm(1)", "signal.alarm(1) in the worker's code at "),
])
def test_the_process_settings_stay_out_of_reach_through_sys_modules(tmp_path, body, refused):
    import signal
    import sys

    limit, timer = sys.getrecursionlimit(), signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, if any
    try:
        out = _run(tmp_path, body + "\nreturn 'reached'")
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert sys.getrecursionlimit() == limit and not 0 < left <= 1.0  # no limit of 50, no 1 s timer
        assert refused in out.get("error", ""), out
    finally:  # a regression must not leave this test process with a recursion limit of 50 or a 1 s SIGALRM
        sys.setrecursionlimit(limit)
        if 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1.0:
            signal.setitimer(signal.ITIMER_REAL, *timer)


def test_closing_sys_modules_sys_stdout_closes_only_the_console(tmp_path):
    """In a child process: it closed the command's stdout (a ValueError traceback, no JSON)."""
    import os
    import subprocess
    import sys

    (tmp_path / "src").mkdir()
    body = "sys.modules['sys'].stdout.close()\nprint('still')\nreturn 'closed'"
    (tmp_path / "src" / "entry.py").write_text(WORKER.format(body=textwrap.indent(body, " " * 8)))
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "call": "W", "name": "a", "method": "go"}]}))
    p = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--worker", "src/entry.py", "--bind", "W=W",
                        "--drive", "drive.json", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=os.environ.copy())
    assert p.returncode == 0 and p.stderr == "", p.stderr[-400:]
    assert json.loads(p.stdout)["outcomes"][0]["value"] == "closed"


@pytest.mark.parametrize("body, refused", [
    # the same limit it has: harmless if it went through (RLIMIT_CPU (1, 1) had the kernel kill the command, -9)
    ("import resource; resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))",
     "resource.setrlimit(7, ("),
    ("import resource; resource.prlimit(0, resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))",
     "resource.prlimit(0, 7, ("),
    # an hour away, and cancelled below if it went through (exit=True after 1 s ended the command, exit 1)
    ("import faulthandler; faulthandler.dump_traceback_later(3600)", "faulthandler.dump_traceback_later(3600) in "),
    ("import faulthandler; faulthandler.cancel_dump_traceback_later()", "faulthandler.cancel_dump_traceback_later() in"),
    ("sys.modules['faulthandler'].dump_traceback_later(3600)", "faulthandler.dump_traceback_later(3600) in "),
])
def test_the_process_limits_and_crash_handlers_are_refused_by_name(tmp_path, body, refused):
    import faulthandler

    try:
        out = _run(tmp_path, body + "\nreturn 'reached'")
    finally:
        if "dump_traceback_later(3600)" in body:
            faulthandler.cancel_dump_traceback_later()
    assert out.get("error", "").startswith("WorkerUnsupported: " + refused), out


@pytest.mark.parametrize("body, value", [
    ("import resource; return resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 0", True),
    ("import resource; return resource.prlimit(0, resource.RLIMIT_NOFILE)[0] > 0", True),
    ("import faulthandler; return faulthandler.is_enabled() in (True, False)", True),
])
def test_reading_them_still_works(tmp_path, body, value):
    assert _run(tmp_path, body).get("value") is value


@pytest.mark.parametrize("body", [
    "async with asyncio.TaskGroup() as tg:\n    tg.create_task(asyncio.sleep(0.1))",  # a raw RuntimeError before
    "tg = asyncio.TaskGroup()",
])
def test_a_task_group_is_refused_by_name(tmp_path, body):
    out = _run(tmp_path, body + "\nreturn 'reached'")
    assert out.get("error", "").startswith("WorkerUnsupported: asyncio.TaskGroup() in the worker's code at "), out


@pytest.mark.parametrize("body, refused", [
    ("import js; return js.Math.floor(1.5)", "js.Math.floor: this member is not provided by alarmkit's Python Worker "
                                              "host (js.Math has random)"),
    ("from js import JSON; return JSON.rawJSON('1')", "js.JSON.rawJSON: this member is not provided by alarmkit's "
                                                      "Python Worker host (js.JSON has parse, stringify)"),
    ("from js import console; console.table([1])", "js.console.table: this member is not provided by alarmkit's "
                                                   "Python Worker host (js.console has debug, error, info, log, warn)"),
    ("from js import Date; return Date.parse('2020')", "js.Date.parse: this member is not provided"),
    ("from js import Object; return Object.assign({}, {})", "js.Object.assign: this member is not provided"),
    ("from js import Response; return Response.redirect('/')", "js.Response.redirect: this member is not provided"),
    ("from js import Request; return Request.x", "js.Request.x: this member is not provided"),
    ("from js import WebSocket; return WebSocket.OPEN", "js.WebSocket.OPEN: this member is not provided"),
])
def test_a_member_of_a_js_global_the_host_lacks_is_refused_by_name(tmp_path, body, refused):
    """It was Python's AttributeError naming alarmkit's own class: type object '_Math' has no attribute 'floor'.
    Now a MemberUnsupported (a WorkerUnsupported and an AttributeError: hasattr is False)."""
    out = _run(tmp_path, body)
    assert out.get("error", "").startswith("MemberUnsupported: " + refused), out


@pytest.mark.parametrize("method, why", [
    ("alarm", "workerd reserves it: no RPC reaches it; alarm() runs when an alarm set with ctx.storage.setAlarm"),
    ("fetch", "an object's fetch() takes a Request, which JSON args cannot make; a fetch step calls the worker's"),
    ("constructor", "workerd reserves it: no RPC reaches it; the object is constructed on its first call"),
    ("dup", "workerd reserves it: no RPC reaches it; stub.dup() copies the stub itself"),
    ("webSocketMessage", "workerd reserves it: no RPC reaches it; the platform calls it"),
])
def test_a_call_step_to_a_reserved_name_is_one_line_before_any_run(tmp_path, capsys, method, why):
    """A drive's call of 'alarm' or 'fetch' was a raw TypeError in the run (JsObject.alarm() missing 1 required
    positional argument: 'info'); 'dup' said the class had no such method though it had one."""
    from alarmkit.cli import main

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "entry.py").write_text(WORKER.format(body="        return 1"))
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "call": "W", "name": "a", "method": method}]}))
    rc = main(["worker", "--worker", str(tmp_path / "src" / "entry.py"), "--bind", "W=W", "--drive",
               str(tmp_path / "drive.json"), "--json"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"alarmkit: error: {tmp_path / 'drive.json'}: step 1: method {method!r} cannot be a call "
                          f"step: {why}"), err
