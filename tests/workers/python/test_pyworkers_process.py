"""What a Python Worker's code changes of the process that Python does not audit: the builtins and the
signals. Its ``builtins`` is its own (``builtins.print = None`` made alarmkit's own output crash with a
traceback); its ``signal`` reads but refuses a change by name (``signal.alarm(1)`` killed the command a
second later, exit -14 with nothing said; ``signal.signal(SIGINT, SIG_IGN)`` left Ctrl-C dead)."""

from __future__ import annotations

import builtins
import os
import signal
import subprocess
import sys

import pytest

import alarmkit as ak

from test_pyworkers_contain import load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

WORKER = '''
import builtins
import signal
from workers import DurableObject

class W(DurableObject):
    async def mark(self):
        builtins.ALARMKIT_WORKER_MARK = "its own"
        builtins.print("captured")
        return [ALARMKIT_WORKER_MARK, signal.getsignal(signal.SIGINT) is not None, int(signal.SIGTERM)]

    async def change(self, call):
        {call}
'''
CHANGES = {
    "signal": ("signal.signal(signal.SIGINT, signal.SIG_IGN)", "signal.signal(<Signals.SIGINT: 2>, <Handlers.SIG_IGN: 1>)"),
    "alarm": ("signal.alarm(0)", "signal.alarm(0)"),
    "setitimer": ("signal.setitimer(signal.ITIMER_REAL, 0)", "signal.setitimer(0, 0)"),
    "pthread_sigmask": ("signal.pthread_sigmask(signal.SIG_BLOCK, [])", "signal.pthread_sigmask(<Sigmasks.SIG_BLOCK: 0>, [])"),
    "siginterrupt": ("signal.siginterrupt(signal.SIGUSR1, False)", "signal.siginterrupt(<Signals.SIGUSR1: 10>, False)"),
}


def test_the_workers_builtins_are_its_own(tmp_path):
    try:
        sim, w, a = load(tmp_path, WORKER.format(call="pass"))
        assert sim.call(a.mark()) == ["its own", True, 15]
        assert not hasattr(builtins, "ALARMKIT_WORKER_MARK")  # the process's builtins are untouched
        assert w.logs == [(0, "log", "captured")]  # its builtins.print is its captured print
    finally:
        vars(builtins).pop("ALARMKIT_WORKER_MARK", None)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_to_the_processs_signals_is_refused_by_name(tmp_path, name):
    call, shown = CHANGES[name]
    before = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        sim, w, a = load(tmp_path, WORKER.replace("{call}", call))
        with pytest.raises(ak.WorkerUnsupported) as info:
            sim.call(a.change(name))
        assert str(info.value) == (
            f"{shown} in the worker's code at {tmp_path / 'src' / 'entry.py'}:13: a signal's handler, mask or timer "
            "is the process's, which every object and alarmkit share, and acts outside the simulation and its "
            "virtual clock; schedule the work with ctx.storage.setAlarm(...) or await asyncio.sleep(...), which run "
            "on the virtual clock")
        assert (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])) == before
    finally:
        signal.signal(signal.SIGINT, before[0])


def test_the_command_prints_as_usual_after_the_worker_replaced_print(tmp_path):
    (tmp_path / "entry.py").write_text("import builtins\nbuiltins.print = None\n"
                                       "from workers import WorkerEntrypoint, Response\n"
                                       "class Default(WorkerEntrypoint):\n"
                                       "    async def fetch(self, request):\n        return Response('ok')\n")
    (tmp_path / "drive.json").write_text('{"steps": [{"at": 0, "fetch": "/"}]}')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "alarmkit", "worker", "--worker", "entry.py", "--drive", "drive.json"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stderr) == (0, "") and "1 request, 0 failed" in p.stdout


SYS_WORKER = '''
import sys
from workers import DurableObject

class W(DurableObject):
    async def write(self):
        sys.stdout.write("out one\\nout ")
        sys.stdout.write("two\\n")
        print("via print", file=sys.stderr)
        sys.stderr.write("partial")
        sys.stderr.flush()
        sys.stdout.close()
        sys.modules["time"] = None
        return [sys.stdout.isatty(), sys.modules["time"], sys.modules["json"].__name__]

    async def change(self):
        {call}
'''


def test_the_workers_sys_output_is_its_console_and_its_modules_its_own(tmp_path, capsys):
    import time

    sim, w, a = load(tmp_path, SYS_WORKER.replace("{call}", "pass"))
    assert sim.call(a.write()) == [False, None, "json"]
    assert w.logs == [(0, "log", "out one"), (0, "log", "out two"), (0, "error", "via print"), (0, "error", "partial")]
    assert sys.modules["time"] is time and not sys.stdout.closed  # the process's are untouched
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")
    ev = sim.events()
    assert list(ev[ev["kind"] == "console"]["detail"].str.contains("out one|out two|via print|partial")) == [True] * 4


@pytest.mark.parametrize("call, shown", [("sys.setrecursionlimit(50)", "sys.setrecursionlimit(50)"),
                                         ("sys.addaudithook(len)", "sys.addaudithook(<built-in function len>)"),
                                         ("sys.settrace(None)", "sys.settrace(None)"),
                                         ("sys.setswitchinterval(1.0)", "sys.setswitchinterval(1.0)")])
def test_a_setting_of_the_interpreter_is_refused_by_name(tmp_path, call, shown):
    limit, interval, trace = sys.getrecursionlimit(), sys.getswitchinterval(), sys.gettrace()
    sim, w, a = load(tmp_path, SYS_WORKER.replace("{call}", call))
    with pytest.raises(ak.WorkerUnsupported) as info:
        sim.call(a.change())
    assert str(info.value) == (
        f"{shown} in the worker's code at {tmp_path / 'src' / 'entry.py'}:17: it sets the interpreter that every "
        "object and alarmkit share (its recursion limit, its trace, profile and audit hooks, its thread switching), "
        "outside the simulation; a Worker does not own its isolate's settings: leave them as they are")
    assert (sys.getrecursionlimit(), sys.getswitchinterval(), sys.gettrace()) == (limit, interval, trace)
