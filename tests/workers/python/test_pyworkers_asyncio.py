"""A Python Worker's ``asyncio`` beyond what runs on the virtual clock (``sleep``, ``gather``, ``create_task``):
a call that needs an event loop (``asyncio.wait_for``, ``asyncio.wait``, an ``Event`` waited on,
``loop.run_until_complete``, a new loop) is refused at the call by name with the way out, in one line, with no
warning or traceback on stderr after it; ``asyncio.run()`` fails with Python's own text (the worker's code runs
inside a loop, as on Pyodide). They were ``RuntimeError: no running event loop``, a network refusal of the
loop's self-pipe socket, a "never awaited" ``RuntimeWarning`` and an "Exception ignored" traceback."""

from __future__ import annotations

import asyncio
import gc

import pytest

import alarmkit as ak
from alarmkit.cli import main

from test_pyworkers_contain import load

CALLS = {
    "wait_for": ("await asyncio.wait_for(asyncio.sleep(10), 1)", "asyncio.wait_for()"),
    "wait": ("await asyncio.wait([asyncio.create_task(asyncio.sleep(1))])", "asyncio.wait()"),
    "event": ("await asyncio.Event().wait()", "asyncio.Event.wait()"),
    "queue": ("await asyncio.Queue().get()", "asyncio.Queue.get()"),
    "loop": ("asyncio.get_event_loop().run_until_complete(asyncio.sleep(0))", "loop.run_until_complete()"),
    "running": ("asyncio.get_running_loop().call_later(1, print)", "loop.call_later()"),
    "new_loop": ("asyncio.new_event_loop()", "asyncio.new_event_loop()"),
    "runner": ("asyncio.Runner().run(asyncio.sleep(0))", "asyncio.Runner()"),
    "to_thread": ("await asyncio.to_thread(print, 1)", "asyncio.to_thread()"),
}


def worker(line: str) -> str:
    return f'''
import asyncio
from workers import DurableObject

class W(DurableObject):
    async def go(self):
        {line}
        return "after"

    async def fine(self):
        await asyncio.sleep(0.5)
        return await asyncio.gather(asyncio.sleep(0, result=1), asyncio.create_task(asyncio.sleep(0.25, result=2)))
'''


def _refused(tmp_path, recwarn, line: str, error: type) -> tuple[str, list, int]:
    """The error of ``go`` running ``line``, then what ``fine`` returns and the clock: the object goes on."""
    gc.collect()  # what earlier tests left behind warns now, not in this test's count
    recwarn.clear()
    sim, w, a = load(tmp_path, worker(line))
    with pytest.raises(error) as info:
        sim.call(a.go())
    return str(info.value), sim.call(a.fine()), sim.now


def _runtime_warnings(recwarn) -> list[str]:
    gc.collect()  # the refused call's frames and what they held are gone: a coroutine never awaited warns here
    return [str(r.message) for r in recwarn if issubclass(r.category, RuntimeWarning)]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_asyncio_call_that_needs_an_event_loop_is_refused_by_name(tmp_path, recwarn, name):
    line, what = CALLS[name]
    text, fine, now = _refused(tmp_path, recwarn, line, ak.WorkerUnsupported)
    where = f"{tmp_path / 'src' / 'entry.py'}:7"
    assert text == (
        f"{what} in the worker's code at {where}: it needs an asyncio event loop, and the worker's code runs on "
        "the simulation's virtual clock instead; await the coroutine itself, or use asyncio.sleep, asyncio.gather "
        "and asyncio.create_task, which run on it")
    assert _runtime_warnings(recwarn) == []
    # the object goes on, asyncio on the clock works, and outside the simulation asyncio is the process's again
    assert fine == [1, 2] and now == 750
    assert asyncio.run(asyncio.sleep(0, result="mine")) == "mine"


def test_asyncio_run_fails_as_inside_a_running_loop(tmp_path, recwarn):
    text, fine, _ = _refused(tmp_path, recwarn, "asyncio.run(asyncio.sleep(0))", RuntimeError)
    assert text == "asyncio.run() cannot be called from a running event loop" and fine == [1, 2]
    assert _runtime_warnings(recwarn) == []


def test_at_the_modules_top_and_on_the_cli_one_line_nothing_after_it(tmp_path, capsys):
    (tmp_path / "entry.py").write_text("import asyncio\nasyncio.new_event_loop()\n")
    (tmp_path / "drive.json").write_text('{"steps": [{"at": 0, "fetch": "/"}]}')
    rc = main(["worker", "--worker", str(tmp_path / "entry.py"), "--drive", str(tmp_path / "drive.json")])
    gc.collect()
    err = capsys.readouterr().err
    assert rc == 2 and err == (  # as every refusal at the module's top
        f"alarmkit: error: asyncio.new_event_loop() in the worker's code at {tmp_path / 'entry.py'}:2: it needs an "
        "asyncio event loop, and the worker's code runs on the simulation's virtual clock instead; await the coroutine itself, or use asyncio.sleep, asyncio.gather "
        "and asyncio.create_task, which run on it\n")
