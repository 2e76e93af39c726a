"""Drive scripts, wrangler files, expectations, and exploring a worker: the outbox of notebook 10 loses
messages when the inbox crashes mid-delivery; its fix does not."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import alarmkit as ak
from alarmkit.errors import DriveError, WorkerError
from alarmkit.workers import explore_worker, load_drive, parse_drive, read_wrangler, run_drive, run_worker
from alarmkit.runtime.profiles import PROFILES

# these tests are about drives, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")

NB = Path(__file__).parents[3] / "notebooks" / "workers"


def test_wrangler_jsonc_with_comments_and_trailing_commas(tmp_path):
    cfg = read_wrangler(NB / "wrangler.jsonc")
    assert cfg.main == "outbox.py" and cfg.compatibility_date == "2026-11-17"
    assert cfg.durable_objects == {"OUTBOX": "Outbox", "INBOX": "Inbox"}
    p = tmp_path / "wrangler.json"
    p.write_text('{"vars": {"GREETING": "hi // not a comment"}, /* c */ "queues": {"producers": [{"binding": "Q", "queue": "q"}]},}')
    got = read_wrangler(p)
    assert got.vars == {"GREETING": "hi // not a comment"} and got.other == {"Q": "queue producer"}
    p.write_text('{"durable_objects": {"bindings": [{"name": 3}]}}')
    with pytest.raises(WorkerError, match="needs text name and class_name"):
        read_wrangler(p)


def test_drive_steps_times_and_refusals():
    d = parse_drive({"steps": [{"fetch": "/a"}, {"after": 50, "call": "B", "name": "x", "method": "m", "args": [1]},
                               {"at": 400, "restart": 10}], "until": 1_000})
    assert [(s["kind"], s["t"]) for s in d.steps] == [("fetch", 0), ("call", 50), ("restart", 400)]
    for bad, msg in [
        ({}, 'steps" must be a non-empty list'),
        ({"steps": [{"at": 5, "fetch": "/"}, {"at": 1, "fetch": "/"}]}, "before the previous step"),
        ({"steps": [{"fetch": "/", "call": "B"}]}, "exactly one of"),
        ({"steps": [{"at": -1, "fetch": "/"}]}, "at must be whole milliseconds"),
        ({"steps": [{"call": "B", "name": "x", "method": "_private"}]}, "private"),
        ({"steps": [{"fetch": "/", "bogus": 1}]}, "unknown field 'bogus'"),
        ({"steps": [{"fetch": "/"}], "until": 0, "extra": 1}, "unknown key 'extra'"),
        ({"steps": [{"fetch": "/"}], "expect": [{"object": "A:a", "sql": "DELETE FROM t", "equals": []}]}, "read-only"),
    ]:
        with pytest.raises(DriveError, match=msg):
            parse_drive(bad, "d.json")


def test_a_drive_naming_a_missing_method_or_binding_is_refused_before_it_runs():
    sim = ak.Simulation(seed=0, fire_latency="exact")
    w = sim.load_worker(NB / "outbox.py", wrangler=NB / "wrangler.jsonc")
    with pytest.raises(DriveError, match=r"step 1: Outbox \(binding OUTBOX\) has no method 'sned'; its methods: \['alarm', 'send'\]"):
        run_drive(w, parse_drive({"steps": [{"call": "OUTBOX", "name": "a", "method": "sned"}]}))
    with pytest.raises(DriveError, match="no Durable Object binding 'NOPE'"):
        run_drive(w, parse_drive({"steps": [{"call": "NOPE", "name": "a", "method": "send"}]}))
    assert sim.events().empty  # nothing ran


def test_run_worker_journals_outcomes_and_retries_like_a_client(tmp_path):
    j = ak.Journal(tmp_path / "j.duckdb")
    r = run_worker(None, NB / "drive.json", wrangler=NB / "wrangler.jsonc", journal=j, profile=EXACT)
    assert [a["t_ms"] for a in r.attempts] == [1_002, 6_002]
    assert [(o["t_ms"], o["done_ms"], o["status"], o["body"]) for o in r["outcomes"]] == [
        (0, 0, 200, '{"queued": 1}'), (300, 300, 200, '{"queued": 2}'), (5_000, 5_000, 200, '{"queued": 1}')]
    assert r["expect_failures"] == []
    assert len(j.events(r.run_id)) == r.event_count
    j.close()
    # one crash in the first send: the client tries again 100 ms later and gets its answer then
    plan = ak.FaultPlan(crashes=[{"task": "rpc:send", "invocation": 1, "at_await": 1, "object": "alice"}])
    r2 = run_worker(None, NB / "drive.json", wrangler=NB / "wrangler.jsonc", faults=plan, profile=EXACT)
    first = r2["outcomes"][0]
    assert (first["attempts"], first["done_ms"], first["status"]) == (2, 100, 200)
    assert r2["expect_failures"] == []


def test_the_expect_invariant_is_a_violation_check_reports(tmp_path):
    plan = ak.FaultPlan(crashes=[{"task": "rpc:deliver", "invocation": 1, "at_await": 1, "object": "inbox"}])
    r = run_worker(NB / "outbox.py", NB / "drive.json", wrangler=NB / "wrangler.jsonc", faults=plan, profile=EXACT)
    assert r["expect_failures"] == ['INBOX:inbox sql \'SELECT id FROM delivered ORDER BY id\': expected '
                                    '[{"id": "m1"}, {"id": "m2"}, {"id": "m3"}], got [{"id": "m3"}]']
    assert [(v.invariant, v.object) for v in ak.check(r).violations] == [("expect", "inbox")]
    fixed = run_worker(NB / "outbox_fixed.py", NB / "drive.json", wrangler=NB / "wrangler.jsonc", faults=plan, profile=EXACT)
    assert fixed["expect_failures"] == [] and ak.check(fixed).ok
    # the flush whose delivery crashed, then workerd's retry of it: 2 s plus up to 25 % jitter, and uncounted
    # (retry_count stays 0) because the failure is the callee's crash (ObjectCrashed), as alarmkit models it
    first, retry = fixed.attempts[:2]
    assert first["t_ms"] == 1_002 and 2_000 <= retry["t_ms"] - 1_002 <= 2_500 and retry["retry_count"] == 0


def test_explore_finds_the_outbox_bug_and_not_in_the_fix():
    broken = explore_worker(NB / "outbox.py", NB / "drive.json", wrangler=NB / "wrangler.jsonc", seeds=0,
                            workers=1, progress=False)
    assert [c.invariant for c in broken.counterexamples] == ["expect"]
    assert "rpc:deliver" in broken.report()
    fixed = explore_worker(NB / "outbox_fixed.py", NB / "drive.json", wrangler=NB / "wrangler.jsonc", seeds=0,
                           workers=1, progress=False)
    assert fixed.counterexamples == [] and len(fixed.table) > 50
    assert "worker" not in ak.SCENARIOS  # registered only while it ran
    snippet = broken.counterexamples[0].snippet()  # a fresh process replays it as printed
    assert snippet.splitlines()[1:3] == ["from alarmkit.workers import register", "register()"]
    out = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("expect "), out.stderr[-2000:]


def test_without_retries_the_first_loss_is_a_send_that_crashed_not_the_outbox_window(tmp_path):
    # README, "Python Workers": each send has "retries": 3; without them the crash points reach the request's
    # own handler first, and the loss explore reports is a send the client saw fail, not the outbox's window
    drive = json.loads((NB / "drive.json").read_text())
    for step in drive["steps"]:
        del step["retries"]
    bare = tmp_path / "drive.json"
    bare.write_text(json.dumps(drive))
    found = {}
    for name, path in (("retries", NB / "drive.json"), ("bare", bare)):
        run = explore_worker(NB / "outbox.py", path, wrangler=NB / "wrangler.jsonc", seeds=0, depth=1,
                             workers=1, progress=False)
        assert run.exit_code == 1
        found[name] = run.counterexamples[0].found_in
    assert found == {"retries": "crash:inbox/rpc:deliver#1@1", "bare": "crash:alice/rpc:send#1@1"}


def test_explore_of_a_drive_without_expect_does_not_count_expect_and_says_so(tmp_path):
    drive = json.loads((NB / "drive.json").read_text())
    del drive["expect"]
    bare = tmp_path / "drive.json"
    bare.write_text(json.dumps(drive))
    kw = dict(wrangler=NB / "wrangler.jsonc", seeds=0, depth=1, workers=1, progress=False)
    plain = explore_worker(NB / "outbox.py", bare, **kw)
    assert plain.exit_code == 0 and "expect" not in plain.checked.invariants
    assert plain.to_dict()["notes"] == [plain.notes[0]] and plain.notes[0].startswith("the drive states no expectations")
    assert "invariants checked over" in plain.report()
    assert "\nnote: the drive states no expectations, so nothing was checked at the end of any run" in plain.report()
    checked = explore_worker(NB / "outbox.py", NB / "drive.json", **kw)  # with expect: counted, no note
    assert "expect" in checked.checked.invariants and checked.notes == [] and "note:" not in checked.report()
    assert len(checked.checked.invariants) == len(plain.checked.invariants) + 1


def test_a_failed_expectation_names_the_alarms_the_drives_until_left_pending(tmp_path):
    # a drive that ends before the outbox's flush: the failure says the work was pending, not that it was lost
    send = {"at": 0, "fetch": "/send", "method": "POST", "body": json.dumps({"to": "alice", "id": "m1", "text": "hi"})}
    d = tmp_path / "drive.json"
    d.write_text(json.dumps({"steps": [send], "until": 500, "expect": [{"object": "OUTBOX:alice", "alarm": None}]}))
    cut = run_worker(NB / "outbox.py", d, wrangler=NB / "wrangler.jsonc", profile=EXACT)
    assert cut["expect_failures"] == ["OUTBOX:alice alarm 'alarm': expected null, got 1000 (the drive's until, 500 ms, "
                                      "ended the run with alarms still pending: alice (set for 1000 ms))"]
    d.write_text(json.dumps({"steps": [send], "until": 500, "expect": [{"object": "OUTBOX:alice", "alarm": 1000}]}))
    assert run_worker(NB / "outbox.py", d, wrangler=NB / "wrangler.jsonc", profile=EXACT)["expect_failures"] == []
    d.write_text(json.dumps({"steps": [send], "expect": [{"object": "INBOX:inbox", "kv": "m1", "equals": 1}]}))
    done = run_worker(NB / "outbox.py", d, wrangler=NB / "wrangler.jsonc", profile=EXACT)  # no until: nothing pending
    assert done["expect_failures"] == ["INBOX:inbox kv 'm1': expected 1, got null"]
