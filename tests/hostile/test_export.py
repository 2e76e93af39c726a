"""Hostile inputs to ``alarmkit export --format perfetto``: generated --out paths and run ids against a
journal and a user's files, answered with exit 0 or exit 2 and one line; the journal and every
file alarmkit did not write keep their bytes; hostile object names reach the file as JSON, never
the terminal raw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tiers import tier_examples  # a tenth of the examples in the quick tier
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_harness import SETTINGS, assert_clean, checksums, run_cli  # noqa: E402

N_EXPORT = tier_examples(50)

_outs = st.one_of(
    st.sampled_from(["j.duckdb", "j.duckdb.wal", "thesis.txt", "notes", ".", "..", "", "t.json", "sub/t.json",
                     "missing/t.json", "other.perfetto.json", "t.json/", "/dev/null", "j.duckdb/../j.duckdb",
                     "./thesis.txt", "trace\x1b[2J.json", "\u202eevil.json"]),
    st.text(alphabet=st.sampled_from(list("abc./-_ \u202e")), min_size=1, max_size=10),
)
_runs = st.one_of(st.sampled_from(["1", "2", "0", "-1", "99", "1.5", "x", "", "9" * 30]), st.integers(-3, 5).map(str))


def test_generated_perfetto_exports_never_touch_foreign_files(tmp_path_factory):
    from alarmkit import Journal

    folder = tmp_path_factory.mktemp("hostile-export")
    with Journal(folder / "j.duckdb") as j:
        rid = j.start_run("evil", "workerd", 0, {})
        j.write_events(rid, [(1, 0, "ns\x1b[2J", "o\u202eevil", "arm", 5, None, None, None),
                             (2, 5, "ns\x1b[2J", "o\u202eevil", "fire", 5, None, 0, None),
                             (3, 6, "ns\x1b[2J", "o\u202eevil", "handler_ok", 5, None, 0, '{"x": "\\u0007"}')])
        j.end_run(rid)
    (folder / "thesis.txt").write_text("three years of work\n")
    (folder / "other.perfetto.json").write_text('{"traceEvents": []}')  # someone else's trace
    (folder / "notes").mkdir()
    (folder / "sub").mkdir()
    foreign = checksums(folder, skip=("t.json",))
    answers = {0: 0, 2: 0}

    @settings(max_examples=N_EXPORT, **SETTINGS)
    @given(out=_outs, run=_runs)
    def one(out: str, run: str) -> None:
        code, stdout, err = run_cli(["export", "--db", "j.duckdb", "--run", run, "--format", "perfetto", "--out", out],
                                    folder)
        assert_clean(code, stdout, err)
        answers[code] += 1
        now = checksums(folder)
        assert {k: now.get(k) for k in foreign} == foreign  # the journal included; new files are alarmkit's traces
        assert not [p for p in folder.rglob("*") if "alarmkit-tmp" in p.name]
        if code == 0 and (folder / "t.json").exists() and out in ("t.json", "./t.json"):
            trace = json.loads((folder / "t.json").read_text())
            names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"]
            assert names == ["ns\x1b[2J:o\u202eevil"]  # kept exactly in the file (JSON-escaped)

    one()
    assert answers[2] >= 20, answers
    code, out, err = run_cli(["export", "--db", "j.duckdb", "--run", "1", "--format", "perfetto", "--out", "t.json"],
                             folder)
    assert code == 0 and out.startswith("wrote t.json"), err
