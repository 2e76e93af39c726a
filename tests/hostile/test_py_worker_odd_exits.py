"""A Python Worker's ``KeyboardInterrupt`` / ``SystemExit`` that the code reporting it cannot read (a
subclass whose ``__str__`` raises, notes that are not text, ``sys.exit(obj)`` whose ``repr`` raises) stops
``alarmkit worker`` with its one line, exit 2, as a plain one does, from every place a worker's code runs;
it crashed the command with a ``ValueError``/``TypeError``/``AttributeError`` traceback. One home:
``_guard.passable`` (through ``_raise_ordinary``, and at import)."""

from __future__ import annotations

import json

import pytest

from alarmkit.cli import main

TEMPLATE = '''
import asyncio
from workers import DurableObject

class Opaque:
    def __repr__(self):
        raise ValueError("repr")

    def __str__(self):
        raise ValueError("str")

class OddInterrupt(KeyboardInterrupt):
    __notes__ = 5

    def __str__(self):
        raise ValueError("interrupt")

class OddExit(SystemExit):
    def __str__(self):
        raise ValueError("exit")

def act():
    {action}

{top}

class W(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        {ctor}

    async def go(self):
        await self.ctx.storage.setAlarm(1_000)
        {rpc}
        return "went"

    async def alarm(self):
        {alarm}
'''
ODD = {  # the worker's code -> the call the one line names
    "exit_opaque_code": ("raise SystemExit(Opaque())", "sys.exit('<an object of class Opaque>')"),
    "exit_subclass": ("raise OddExit(3)", "sys.exit(3)"),
    "interrupt_subclass": ("raise OddInterrupt()", "raise KeyboardInterrupt"),
    "interrupt_opaque_note": ("e = KeyboardInterrupt('x')\n    e.__notes__ = [Opaque()]\n    raise e",
                              "raise KeyboardInterrupt"),
    "interrupt_notes_not_a_list": ("e = KeyboardInterrupt('x')\n    e.__notes__ = 5\n    raise e", "raise KeyboardInterrupt"),
    # hostile pass: a code too big to print (its repr raised ValueError past 4,300 digits: a traceback), one of a
    # megabyte and a megabyte of notes (a megabyte-long line)
    "exit_huge_int": ("raise SystemExit(10 ** 5000)", "sys.exit(<an int of 16,610 bits>)"),
    "exit_long_text": ("raise SystemExit('x' * 10 ** 6)", "sys.exit('" + "x" * 256 + "..." + "x" * 39 + "')"),
    "exit_long_notes": ("e = SystemExit(3)\n    e.__notes__ = ['n' * 1000] * 1000\n    raise e", "sys.exit(3)"),
}
PLACES = ["top", "ctor", "rpc", "alarm"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", sorted(ODD))
def test_an_unreadable_interrupt_or_exit_of_the_worker_is_one_line(tmp_path, capsys, name, place):
    action, call = ODD[name]
    slots = {p: ("act()" if p == place else "" if p == "top" else "pass") for p in PLACES}
    (tmp_path / "entry.py").write_text(TEMPLATE.format(action=action, **slots))
    (tmp_path / "drive.json").write_text(json.dumps({"steps": [{"at": 0, "call": "W", "name": "a", "method": "go"}],
                                                     "until": 5_000}))
    rc = main(["worker", "--worker", str(tmp_path / "entry.py"), "--bind", "W=W", "--drive",
               str(tmp_path / "drive.json"), "--json"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith(f"alarmkit: error: worker: the code it ran called {call} (raised in the simulated code of ")
    assert "Ctrl-C" not in err and "Traceback" not in err and len(err) < 1_000
    assert ("the worker was not loaded, nothing ran" in err) == (place == "top"), err  # its own notes change nothing
