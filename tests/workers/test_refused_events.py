"""Every refusal is journaled and named in the verdict: a library that catches a ``WorkerUnsupported`` and
carries on shows ``handler_ok``, yet the run did not do what it would on workerd; each refusal is a
``refused`` event at the exact virtual time, and the verdict is amber."""

import json
import shutil

import pytest

from alarmkit.errors import WorkerUnsupported
from alarmkit.workers import run_worker

PY = '''
from workers import DurableObject
import js
import time
try:
    time.sleep(1)  # refused at the call: it would block the isolate and never move the virtual clock
except Exception as err:
    CAUGHT = str(err)

class Pinger(DurableObject):
    async def start(self):
        await self.ctx.storage.setAlarm(1234)
        return "ok"

    async def alarm(self):
        try:
            await js.fetch("https://example.com/in-alarm")
        except Exception:
            pass
'''

JS = '''
import { DurableObject } from "cloudflare:workers";
export class Pinger extends DurableObject {
  async start() { await this.ctx.storage.setAlarm(1234); return "ok"; }
  async alarm() {
    try { await fetch("https://example.com/in-alarm"); } catch (e) { /* a library's catch-and-go-on */ }
  }
}
export default { async fetch() { return new Response("ok"); } };
'''

DRIVE = {"steps": [{"at": 0, "call": "PING", "name": "p", "method": "start"}], "until": 5000}


def _run(tmp_path, name, source):
    entry = tmp_path / name
    entry.write_text(source)
    (tmp_path / "drive.json").write_text(json.dumps(DRIVE))
    return run_worker(entry, tmp_path / "drive.json", bindings={"PING": "Pinger"})


def _refused(r):
    ev = r.events
    return [(int(row.t_ms), row.object_id if isinstance(row.object_id, str) else None, json.loads(row.detail)["text"])
            for row in ev[ev["kind"] == "refused"].itertuples()]


def test_a_python_worker_catching_refusals_at_import_and_in_alarm_is_journaled_at_the_exact_times(tmp_path):
    r = _run(tmp_path, "entry.py", PY)
    got = _refused(r)
    ev = r.events
    assert list(ev.loc[ev["kind"] == "fire", "t_ms"]) == [1235]  # set for 1234; delivered 1 ms later, as workerd's
    assert [t for t, _, _ in got] == [0, 1235]
    assert got[0][1] is None and got[0][2].startswith("time.sleep() blocks the whole isolate")  # the module's top: about the whole run, at 0 ms
    assert got[1][1] == "p" and got[1][2].startswith("js.fetch(...): outbound requests leave the simulation")  # inside alarm(), at its fire time
    kinds = list(r.events["kind"])
    assert "handler_ok" in kinds and "handler_error" not in kinds  # the code caught both: the platform saw success
    v = r.verdict
    assert v.status == "warning"
    w = [f for f in v.warnings if f.invariant == "refused"]
    assert len(w) == 1 and w[0].t_ms == 0
    assert w[0].text.startswith("2 refusals: the code touched surface alarmkit does not simulate (first: at 0 ms, ")
    assert w[0].text.endswith("bind a fake with sim.load_worker(..., bindings={...}) (or run_drive's bindings, or --bind)")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_js_object_catching_a_refused_fetch_in_alarm_is_journaled_at_the_fire_time_and_the_verdict_amber(tmp_path):
    r = _run(tmp_path, "entry.js", JS)
    got = _refused(r)
    assert [(t, o) for t, o, _ in got] == [(1235, "p")]  # the fire's own time (set for 1234, delivered at 1235)
    assert got[0][2].startswith('fetch("https://example.com/in-alarm") is refused under alarmkit\'s JavaScript host')
    ev = r.events
    assert list(ev.loc[ev["kind"] == "fire", "t_ms"]) == list(ev.loc[ev["kind"] == "handler_ok", "t_ms"]) == [1235]  # before: handler_ok only, a green verdict
    v = r.verdict
    assert v.status == "warning"
    w = [f.text for f in v.warnings if f.invariant == "refused"]
    assert w and w[0].startswith('1 refusal: the code touched surface alarmkit does not simulate (first: at 1.235 s, '
                                 'fetch("https://example.com/in-alarm") is refused')


def test_the_hook_cannot_be_turned_off():
    for attr in ("noticed", "__init__"):
        with pytest.raises(WorkerUnsupported, match=f"WorkerUnsupported.{attr} = ... is refused"):
            setattr(WorkerUnsupported, attr, lambda *a: None)
    with pytest.raises(WorkerUnsupported, match="del WorkerUnsupported.noticed is refused"):
        del WorkerUnsupported.noticed


DISABLE = '''
from workers import DurableObject
import time
try:
    import alarmkit.errors  # a worker cannot import alarmkit (refused): it takes the class from a refusal
except Exception as err:
    KIND = type(err)
try:
    KIND.noticed = lambda self: None
except Exception as err:
    REFUSED = str(err)
try:
    time.sleep(1)  # still journaled
except Exception:
    pass

class Pinger(DurableObject):
    async def start(self):
        return REFUSED
'''


def test_a_worker_trying_to_disable_the_hook_is_refused_and_journaled(tmp_path):
    r = _run(tmp_path, "entry.py", DISABLE)
    got = _refused(r)
    assert [(t, o) for t, o, _ in got] == [(0, None)] * 3
    assert got[0][2].startswith("import alarmkit.errors in the worker's code")
    assert got[1][2].startswith("WorkerUnsupported.noticed = ... is refused")
    assert got[2][2].startswith("time.sleep() blocks the whole isolate")


def test_the_worker_command_says_the_refusals_in_text_and_json(tmp_path, capsys):
    from alarmkit.cli import main

    (tmp_path / "entry.py").write_text(PY)
    (tmp_path / "drive.json").write_text(json.dumps(DRIVE))
    args = ["worker", "--worker", str(tmp_path / "entry.py"), "--bind", "PING=Pinger", "--drive", str(tmp_path / "drive.json")]
    main(args + ["--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["refusals"]["count"] == 2 and out["refusals"]["first_ms"] == 0
    assert out["refusals"]["first"].startswith("time.sleep() blocks the whole isolate")
    assert out["verdict"]["status"] == "warning"
    main(args)
    text = capsys.readouterr().out
    assert "refusals: 2 (journaled as refused events; first at 0 ms: time.sleep() blocks the whole isolate" in text
    assert "! 2 refusals: the code touched surface alarmkit does not simulate (first: at 0 ms, " in text


def test_the_refused_mark_is_drawn_and_in_the_glossary():
    from alarmkit.viz._handout import MEANING
    from alarmkit.viz._timeline import NOTABLE, VERMILION, style

    assert style("refused") == (VERMILION, "octagon-open", 12, 1) and "refused" in NOTABLE and "refused" in MEANING


JS_FAKE = '''
import { DurableObject } from "cloudflare:workers";
export class Pinger extends DurableObject {
  async start() { await this.ctx.storage.setAlarm(500); return "ok"; }
  async alarm() {
    try { await this.env.API.publish("x"); } catch (e) { /* caught: the run goes on */ }
  }
}
'''


class _Fake:
    def other(self):
        return 1


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_refusal_python_makes_answering_a_js_call_is_journaled_on_the_calling_object(tmp_path):
    entry = tmp_path / "entry.js"
    entry.write_text(JS_FAKE)
    import alarmkit as ak
    from alarmkit.journal import verdict_of_events

    sim = ak.Simulation(seed=1)
    w = sim.load_worker(entry, bindings={"PING": "Pinger", "API": _Fake()})
    assert sim.call(w.env.PING.get("p").start()) == "ok"
    sim.run(until=5000)
    ev = sim.events()
    got = [(int(row.t_ms), row.object_id, json.loads(row.detail)["text"]) for row in ev[ev["kind"] == "refused"].itertuples()]
    assert list(ev.loc[ev["kind"] == "fire", "t_ms"]) == [502]  # this simulation's fire of the alarm set for 500
    assert [(t, o) for t, o, _ in got] == [(502, "p")]  # at the fire's time, on the calling object
    assert got[0][2].startswith("env.API.publish: the Python object bound as API (_Fake) has no method 'publish'")
    assert verdict_of_events(ev).status == "warning"
