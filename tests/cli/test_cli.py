"""The command line, run as a user runs it: a real subprocess."""

import json
import subprocess
import sys

import duckdb
import pytest


def alarmkit(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "alarmkit", *args], capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_exhaustion_json_shows_the_ladder_null_alarm_and_the_lease_left():
    out = json.loads(alarmkit("run", "lease-exhaustion", "--seed", "1", "--json").stdout)
    assert out["scenario"] == "lease-exhaustion" and out["seed"] == 1
    assert [a["retry_count"] for a in out["attempts"]] == [0, 1, 2, 3, 4, 5, 6]
    t = [a["t_ms"] for a in out["attempts"]]
    for n, (a, b) in enumerate(zip(t, t[1:])):
        base = 2000 << n
        assert base <= b - a - 2 <= base + base // 4
    assert out["final_alarm"] is None
    assert out["rows_left"] == ["lease-0"]
    assert out["effects"] == {}
    assert out["events"] > 0


def test_run_writes_the_journal_file_and_prints_a_summary(tmp_path):
    db = tmp_path / "j.duckdb"
    p = alarmkit("run", "lease-crash-after-effect", "--seed", "2", "--db", str(db))
    assert "retry_count=1" in p.stdout and "lease-0 x2" in p.stdout
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT scenario FROM runs").fetchall() == [("lease-crash-after-effect",)]


def test_scenario_parameters_are_json_not_code():
    out = json.loads(alarmkit("run", "lease-normal", "--set", "ttls=[100, 200, 400]", "--json").stdout)
    assert [a["t_ms"] for a in out["attempts"]] == [101, 201, 401]  # 1 ms late each: seed 0's draws


def test_list_names_every_lease_scenario():
    names = [s["name"] for s in json.loads(alarmkit("list", "--json").stdout)]
    for n in ("lease-normal", "lease-crash-after-effect", "lease-moves-only-earlier", "lease-exhaustion", "lease-revival"):
        assert n in names


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no-such-thing"], "unknown scenario 'no-such-thing'"),
        (["run", "lease-normal", "--seed", "abc"], "seed must be an integer, got 'abc'"),
        (["run", "lease-normal", "--set", "nonsense"], "parameters look like name=value"),
        (["run", "lease-normal", "--set", "ttl=5"], "has no parameter(s) ['ttl']"),
        (["run", "lease-normal", "--profile", "nope"], "invalid choice: 'nope'"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, message):
    p = alarmkit(*args, check=False)
    assert p.returncode == 2
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_console_script_is_installed():
    import shutil

    exe = shutil.which("alarmkit", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert exe, "the alarmkit console script is not on the venv's PATH"
    p = subprocess.run([exe, "list"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "lease-revival" in p.stdout
