"""Hostile input to ``alarmkit worker`` and ``alarmkit explore --worker``: generated drive scripts, wrangler
files and worker modules, and outputs pointed at files alarmkit did not write. Every run ends with exit 0
(1 only when a drive expectation failed, and says so), or exit 2 with one line; no file but those asked
for changes; nothing printed carries a control character."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is a dev dependency (pip install hypothesis)")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from tiers import tier_examples  # a tenth of the examples in the quick tier

from alarmkit.cli import main  # noqa: E402

NB = Path(__file__).parents[2] / "notebooks" / "workers"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SETTINGS = settings(max_examples=tier_examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

WORKER = """
from workers import DurableObject, Response, WorkerEntrypoint

class Box(DurableObject):
    async def put(self, value):
        await self.ctx.storage.put("v", value)
        await self.ctx.storage.setAlarm(1000)
        return value

    async def alarm(self):
        await self.ctx.storage.put("fired", True)

class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return Response(await request.text() + "\\x1b[31m\\u202e", status=200)
"""


def snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        rc = exit_.code
    out, err = capsys.readouterr()
    return rc, out, err


def check(rc: int, out: str, err: str) -> None:
    assert rc in (0, 1, 2), (rc, out, err)
    assert not CONTROL.search(out) and not CONTROL.search(err), (out, err)
    assert "Traceback" not in err
    if rc == 2:
        lines = [x for x in err.splitlines() if x.startswith("alarmkit: error")]
        assert len(lines) == 1, err
    if rc == 1:  # an expectation failed, the run's verdict is BROKEN, or explore found a counterexample
        assert "EXPECT FAILED" in out or out.startswith("verdict: BROKEN") or '"violations": [{' in out \
            or "shrunk from" in out


@pytest.fixture
def project(tmp_path):
    (tmp_path / "w.py").write_text(WORKER)
    return tmp_path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
steps = st.fixed_dictionaries({}, optional={
    "at": st.integers(-5, 3000) | json_values, "after": st.integers(0, 500), "fetch": st.text(max_size=30) | st.just("/x"),
    "call": st.sampled_from(["BOX", "NOPE", ""]) | st.text(max_size=5), "name": st.text(max_size=6),
    "method": st.sampled_from(["put", "alarm", "missing", "_p"]), "args": st.lists(json_values, max_size=2) | json_values,
    "body": st.text(max_size=20) | json_values, "restart": st.integers(-1, 3000), "retries": st.integers(-1, 3),
    "evict": st.sampled_from(["BOX", "X"]),
})
drives = st.fixed_dictionaries({"steps": st.lists(steps, max_size=5)}, optional={
    "until": st.integers(-1, 5000) | json_values,
    "expect": st.lists(st.fixed_dictionaries({}, optional={
        "object": st.sampled_from(["BOX:a", "BOX", "X:y"]) | st.text(max_size=6), "kv": st.text(max_size=4),
        "sql": st.sampled_from(["SELECT 1 AS x", "DELETE FROM t", "SELECT * FROM nope"]), "alarm": json_values,
        "equals": json_values, "requests": st.sampled_from(["ok", "no"])}), max_size=3)})


@SETTINGS
@given(drive=drives | json_values)
def test_generated_drive_scripts(project, capsys, drive):
    d = project / "drive.json"
    d.write_text(json.dumps(drive))
    before = snapshot(project)
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    check(rc, out, err)
    assert snapshot(project) == before


@SETTINGS
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_generated_drive_and_wrangler_text(project, capsys, text):
    for name, flag in (("drive.json", "--drive"), ("drive.toml", "--drive"), ("wrangler.jsonc", "--wrangler"),
                       ("wrangler.toml", "--wrangler")):
        f = project / name
        f.write_text(text, encoding="utf-8", errors="surrogateescape")
        drive = f if flag == "--drive" else NB / "drive.json"
        extra = [flag, str(f)] if flag == "--wrangler" else []
        before = snapshot(project)
        rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--drive", str(drive), *extra])
        check(rc, out, err)
        assert snapshot(project) == before


@SETTINGS
@given(source=st.text(max_size=120), cls=st.text(max_size=10))
def test_generated_worker_modules(tmp_path_factory, capsys, source, cls):
    folder = tmp_path_factory.mktemp("w")
    (folder / "w.py").write_text(source, encoding="utf-8", errors="surrogateescape")
    (folder / "d.json").write_text('{"steps": [{"fetch": "/"}]}')
    before = snapshot(folder)
    rc, out, err = run(capsys, ["worker", str(folder / "w.py"), "--drive", str(folder / "d.json"), "--bind", f"B={cls}"])
    check(rc, out, err)
    assert snapshot(folder) == before


def test_a_control_character_response_is_printed_escaped(project, capsys):
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"fetch": "/", "method": "POST", "body": "a\x07b"}]}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--drive", str(d)])
    assert rc == 0 and "a\\x07b\\x1b[31m\\u202e" in out
    check(rc, out, err)


def test_outputs_that_are_not_alarmkit_files_are_refused_and_kept(project, capsys):
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [1]}]}))
    mine = project / "notes.html"
    mine.write_text("<p>my notes</p>")
    db = project / "data.duckdb"
    db.write_bytes(b"not a journal")
    for argv in (["--report", str(mine)], ["--db", str(db)], ["--report", str(project)]):
        rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d), *argv])
        assert rc == 2, (argv, out, err)
        check(rc, out, err)
    assert mine.read_text() == "<p>my notes</p>" and db.read_bytes() == b"not a journal"


def test_a_drive_expectation_that_fails_exits_1_and_says_which(project, capsys):
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [7]}],
                             "expect": [{"object": "BOX:a", "kv": "v", "equals": 8}]}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    assert rc == 1 and "EXPECT FAILED: BOX:a kv 'v': expected 8, got 7" in out
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [7]}],
                             "expect": [{"object": "BOX:a", "kv": "v", "equals": 7}, {"object": "BOX:a", "kv": "fired", "equals": True}]}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    assert rc == 0 and "  all 2 expectations of the drive held\n" in out
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [7]}]}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    assert rc == 0 and "the drive states no expectations: nothing was checked at the end" in out
    assert "held" not in out


@pytest.mark.parametrize("argv, message", [
    (["worker", "missing.py", "--drive", "d.json"], "no file 'missing.py'"),
    (["worker", "{w}", "--drive", "{d}", "--bind", "BOX=Nope"], "has no class 'Nope'"),
    (["worker", "{w}", "--drive", "{d}", "--bind", "BOX=Default"], "Default is not a Durable Object class"),
    (["worker", "{w}", "--drive", "{d}"],  # no --bind: the message names the way to bind it
     "has no Durable Object binding 'BOX'; its bindings: []; bind a class of the module to it with --bind BOX=ClassName"),
    (["worker", "{w}", "--drive", "{d}", "--bind", "BOX=Box", "--compat", "soon"], "compatibility_date is a date"),
    (["worker", "{w}", "--drive", "{d}", "--bind", "BOX=Box", "--profile", "nope"], "nope"),
    (["worker", "{w}", "--drive", "{bad}", "--bind", "BOX=Box", "--db", "{j}", "--report", "{r}"],
     "Box (binding BOX) has no method 'sned'; its methods: ['alarm', 'put']"),
    (["explore", "--worker", "{w}", "--drive", "{bad}", "--bind", "BOX=Box"], "has no method 'sned'"),
    (["explore", "--worker", "{w}"], "needs --drive"),
    (["explore", "lease-normal", "--worker", "{w}", "--drive", "{d}"], "not both"),
    # a flag only explore --worker reads, given with a scenario: it was ignored (--event-limit 1: exit 0, every run)
    *[(["explore", "lease-normal", *flag], f"explore lease-normal: {flag[0]} only works with --worker ENTRY --drive FILE")
      for flag in (["--event-limit", "1"], ["--event-limit", "0"], ["--wall-limit", "2"],
                   ["--drive", "{d}"], ["--bind", "BOX=Box"], ["--compat", "2026-01-01"], ["--wrangler", "{d}"])],
    (["explore", "--worker", "{w}", "--drive", "{d}", "--bind", "BOX=Box", "--invariant", "nope", "--workers", "1"],
     "unknown invariant 'nope'"),
])
def test_bad_arguments_are_one_line_and_exit_2(project, capsys, argv, message):
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [1]}]}))
    bad = project / "bad.json"
    bad.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "sned"}]}))
    argv = [a.format(w=project / "w.py", d=d, bad=bad, j=project / "j.duckdb", r=project / "r.html") for a in argv]
    before = snapshot(project)
    rc, out, err = run(capsys, argv)
    assert rc == 2 and message in err, err
    check(rc, out, err)
    assert snapshot(project) == before


def test_explore_worker_from_the_cli_finds_the_outbox_bug(capsys):
    rc, out, err = run(capsys, ["explore", "--worker", str(NB / "outbox.py"), "--wrangler", str(NB / "wrangler.jsonc"),
                                "--drive", str(NB / "drive.json"), "--seeds", "0", "--workers", "1",
                                "--invariant", "expect", "--json"])
    check(rc, out, err)
    found = json.loads(out)
    assert rc == 1 and [c["invariant"] for c in found["violations"]] == ["expect"] and found["runs_with_violations"] > 0


def test_the_generated_drives_reach_the_worker(project, capsys):
    """The generators are not all refused at the door: a well-formed generated drive runs the object."""
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"at": 5, "call": "BOX", "name": "\u202eb", "method": "put", "args": [{"k": None}]},
                                       {"after": 1, "fetch": "http://h/\x1b"}], "until": 3000}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    check(rc, out, err)
    assert rc == 0 and "alarm() at      1001 ms" in out and "BOX:\\u202eb.put" in out  # 1 ms late: seed 0's draw


@pytest.mark.parametrize("name", ["__class__", "__dict__"])
def test_a_dunder_binding_name_is_refused_in_one_line(tmp_path, name):
    """``--bind __class__=S`` raised TypeError from setattr on the env; it is a binding name error now."""
    import alarmkit as ak
    from alarmkit.workers import WorkerError

    worker = tmp_path / "w.py"
    worker.write_text("from workers import DurableObject\n\nclass S(DurableObject):\n    async def ping(self):\n"
                      "        return 1\n", encoding="utf-8")
    with pytest.raises(WorkerError, match=r"^binding names are identifiers that do not start with '__'"):
        ak.Simulation().load_worker(worker, bindings={name: "S"})


def test_an_endless_recursive_query_in_an_expectation_is_stopped_and_named(project, capsys, monkeypatch):
    monkeypatch.setenv("ALARMKIT_SQL_STEP_LIMIT", "2000000")
    endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) AS n FROM c"
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"call": "BOX", "name": "a", "method": "put", "args": [7]}],
                             "expect": [{"object": "BOX:a", "sql": endless, "equals": [{"n": 1}]}]}))
    rc, out, err = run(capsys, ["worker", str(project / "w.py"), "--bind", "BOX=Box", "--drive", str(d)])
    check(rc, out, err)
    assert rc == 1 and "EXPECT FAILED: BOX:a sql " in out
    assert "error: the query was stopped after 2,000,000 SQLite steps (an endless WITH RECURSIVE?)" in out


@SETTINGS
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_generated_dev_vars(project, capsys, text):
    """A ``.dev.vars`` beside the wrangler file: read (never evaluated) or refused in one line naming the line."""
    (project / "wrangler.jsonc").write_text('{"main": "w.py", "durable_objects": {"bindings": [{"name": "BOX", "class_name": "Box"}]}}')
    (project / ".dev.vars").write_text(text, encoding="utf-8", errors="surrogateescape")
    before = snapshot(project)
    rc, out, err = run(capsys, ["worker", "--wrangler", str(project / "wrangler.jsonc"), "--drive", str(NB / "drive.json")])
    check(rc, out, err)
    if rc == 2 and ".dev.vars" in err:
        assert re.search(r"\.dev\.vars(, line \d+: expected NAME=value|: 'utf-8' codec|: )", err), err
    assert snapshot(project) == before


@SETTINGS
@given(key=st.sampled_from(["compatibility_flags", "define", "alias"]), value=json_values)
def test_generated_wrangler_flags_define_alias(project, capsys, key, value):
    (project / "wrangler.jsonc").write_text(json.dumps({"main": "w.py", key: value, "durable_objects": {
        "bindings": [{"name": "BOX", "class_name": "Box"}]}}))
    before = snapshot(project)
    rc, out, err = run(capsys, ["worker", "--wrangler", str(project / "wrangler.jsonc"), "--drive", str(NB / "drive.json")])
    check(rc, out, err)
    assert snapshot(project) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=st.sampled_from(["flag", "positional", "both", "neither"]),
       entry=st.sampled_from(["w.py", "missing.py", "", "dir/", "\x1b[2J.py", "w.py\u202e"]))
def test_the_worker_module_by_flag_or_old_positional(capsys, project, spelling, entry):
    """``--worker ENTRY`` (the one flag of worker, explore, record) or the old positional ENTRY (a note after the
    output): any path, exit 0/1 or one line with exit 2; both at once is refused."""
    d = project / "d.json"
    d.write_text(json.dumps({"steps": [{"at": 0, "call": "BOX", "name": "a", "method": "put", "args": [1]}]}))
    path = str(project / entry)
    which = {"flag": ["--worker", path], "positional": [path], "both": [path, "--worker", path], "neither": []}[spelling]
    rc, out, err = run(capsys, ["worker", *which, "--bind", "BOX=Box", "--drive", str(d)])
    check(rc, out, err)
    if spelling == "both":
        assert rc == 2 and "not both" in err
    if spelling == "neither":
        assert rc == 2 and "no worker module" in err
    if rc == 0:
        assert ("the positional ENTRY is the old spelling of --worker" in err) == (spelling == "positional")


@pytest.mark.parametrize("where", ["vars", ".dev.vars"])
def test_a_var_that_takes_a_bindings_name_is_refused_not_shadowed(project, capsys, where):
    """``V=oops`` in .dev.vars (or vars) beside a wrangler file that binds V made env.V a string: the request
    answered 500 and the verdict said nothing broke."""
    config = {"main": "w.py", "durable_objects": {"bindings": [{"name": "BOX", "class_name": "Box"}]}}
    if where == "vars":
        config["vars"] = {"BOX": "oops"}
    else:
        (project / ".dev.vars").write_text("BOX=oops\n")
    (project / "wrangler.jsonc").write_text(json.dumps(config))
    before = snapshot(project)
    rc, out, err = run(capsys, ["worker", "--wrangler", str(project / "wrangler.jsonc"), "--drive", str(NB / "drive.json")])
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert f"{where} beside " in err and "sets 'BOX', which is a Durable Object binding of the wrangler file" in err
    assert snapshot(project) == before
