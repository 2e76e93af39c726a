"""Hostile Python Workers that allocate without end (``--memory-limit MB``): from every place a worker's code
runs, the command stops with exit 2 and one line naming the object (or the import), the limit and the way
out; the same loop with an end under the limit runs; bad ``--memory-limit`` values are refused by name.
A child under ``RLIMIT_AS`` (``harness.run_cli``) where a budget that failed would take the machine's RAM."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from alarmkit.workers.python._contain import RSS_AVAILABLE
from harness import count, run_cli, run_main
from test_py_worker_hostile import check, run, write_worker

pytestmark = pytest.mark.skipif(not RSS_AVAILABLE, reason="--memory-limit reads /proc/self/statm (Linux)")

HOGS = {
    "list": "xs = []\n    while True:\n        xs.append(bytearray(1 << 20))",
    "dict": "d = {}\n    while True:\n        d[len(d)] = b'x' * (1 << 20)",
    "caught": "xs = []\n    while True:\n        try:\n            xs.append(bytearray(1 << 20))\n        except Exception:\n"
              "            pass",
    "string": "s = ''\n    while True:\n        s += 'x' * (1 << 20)",
}
WHO = {"top": "importing ", "ctor": "object a (the constructor) ", "rpc": "object a (rpc:go) ",
       "alarm": "object a (alarm) ", "helper": "object a (rpc:go) ", "task": "object a (task) "}


@settings(max_examples=10)
@given(name=st.sampled_from(sorted(HOGS)), place=st.sampled_from(sorted(WHO)))
def test_an_allocation_without_end_is_stopped_in_one_line_naming_the_object(tmp_path_factory, capsys, name, place):
    count("worker (python, memory)")
    folder = tmp_path_factory.mktemp("hog")
    entry = write_worker(folder, 0, HOGS[name], place)
    rc, out, err = run(capsys, folder, entry, "--memory-limit", "48")
    check(rc, out, err)
    assert rc == 2 and "grew the process's memory by " in err and "(memory_limit_mb=48)" in err, err
    assert f"alarmkit: error: {WHO[place]}" in err and "--memory-limit MB" in err and "memory_limit_mb = None" in err


def test_the_command_stops_a_hog_in_alarm_in_a_child_and_runs_the_same_loop_under_the_limit(tmp_path):
    entry = write_worker(tmp_path, 0, HOGS["list"], "alarm")
    argv = ["worker", "--worker", str(entry), "--bind", "W=W", "--drive", str(tmp_path / "drive.json"), "--json"]
    o = run_cli([*argv, "--memory-limit", "64"], tmp_path)
    assert o.code == 2 and o.out == "" and len(o.err.splitlines()) == 1, o.err
    assert o.err.startswith("alarmkit: error: object a (alarm) grew the process's memory by ")
    assert "(memory_limit_mb=64), stopped at " in o.err and str(entry) in o.err
    bounded = HOGS["list"].replace("while True:", "while len(xs) < 40:")
    entry = write_worker(tmp_path, 0, bounded, "alarm")
    o = run_cli([*argv, "--memory-limit", "128"], tmp_path)
    assert o.code == 0 and o.err == "", o.err
    summary = json.loads(o.out)
    assert [(a["t_ms"], a["outcome"]) for a in summary["attempts"]] == [(1_001, "ok")], summary["attempts"]


@pytest.mark.parametrize("bad", ["0x", "-1", "1.5", "1048577", "nan", "", "64MB", "1e3"])
def test_a_bad_memory_limit_flag_is_refused_naming_the_value_and_the_range(tmp_path, bad):
    entry = write_worker(tmp_path, 0, "pass", "alarm")
    o = run_main(["worker", "--worker", str(entry), "--bind", "W=W", "--drive", str(tmp_path / "drive.json"),
                  "--memory-limit", bad], tmp_path)
    lines = [line for line in o.err.splitlines() if line.startswith("alarmkit: ")]
    assert o.code == 2 and lines == [
        f"alarmkit: error: argument --memory-limit: --memory-limit takes whole MB in 0..1,048,576 (0: no limit), "
        f"got {bad!r}; the default is 2,048"], o.err
    o = run_main(["explore", "prod-rearm-at-now", "--memory-limit", "64"], tmp_path)
    assert o.code == 2 and "--memory-limit only works with --worker ENTRY --drive FILE" in o.err


def test_where_memory_cannot_be_read_the_command_says_the_limit_is_not_checked(tmp_path, capsys, monkeypatch):
    from alarmkit.workers.python import _contain

    monkeypatch.setattr(_contain, "RSS_AVAILABLE", False)  # as on macOS or Windows
    entry = write_worker(tmp_path, 0, HOGS["list"].replace("while True:", "while len(xs) < 64:"), "alarm")
    rc, out, err = run(capsys, tmp_path, entry, "--memory-limit", "16")
    assert rc == 0 and json.loads(out)["attempts"][0]["outcome"] == "ok"
    assert err == ("alarmkit: note: --memory-limit is not checked on this system: alarmkit reads a process's memory "
                   "from /proc/self/statm (Linux); --wall-limit and --event-limit still apply\n")
    rc, out, err = run(capsys, tmp_path, entry)  # the default, not asked for: nothing said
    assert rc == 0 and err == ""


@pytest.mark.parametrize("entry, said", [("src/index.ts", True), ("src/worker.MJS", True), ("src/entry.py", False)])
def test_a_memory_limit_given_for_a_javascript_worker_is_said_not_to_reach_it(tmp_path, entry, said):
    import argparse

    from alarmkit._aliases import notes
    from alarmkit.workers.command import _check_paths

    path = tmp_path / entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    (tmp_path / "drive.json").write_text("{}")
    for limit, expect in ((64, said), (2_048, False), (None, False)):  # the default or none: nothing to say
        args = argparse.Namespace(entry=str(path), drive=str(tmp_path / "drive.json"), wrangler=None, memory_limit=limit)
        _check_paths(args)
        assert (notes(args) == ["--memory-limit bounds a Python Worker's code; a JavaScript worker runs in node, which "
                                "it does not reach (node's own heap limit applies)"]) is expect, (limit, notes(args))
