"""Hostile input on every subcommand and flag: empty strings, huge and non-finite numbers, text that
is not text, device files, paths the system refuses, symlinks to a user's file. Each is one line and
exit 2 from the command line's ``main`` (run in this process, tests/clirun.py; the real console script
runs in tests/cli/test_cli_errors.py), and leaves the user's files as they were."""

from __future__ import annotations

import os

import pytest

from test_cli_errors import alarmkit, digest, immutable, make_journal, refused  # noqa: F401 - a fixture

SURROGATE_PATH = os.fsdecode(b"\xff.duckdb")  # a file name that is not UTF-8, as a shell can pass it


@pytest.fixture(scope="module")
def journal(tmp_path_factory):
    db = tmp_path_factory.mktemp("j") / "j.duckdb"
    make_journal(db)
    return db


@pytest.mark.parametrize("args, fragment", [
    # empty strings
    (["run", "lease-normal", "--db", ""], "--db is an empty path (\"\"); pass a path, e.g. --db journal.duckdb"),
    (["calibrate", "--probe", "", "--reference"], "unknown probe(s) ['']"),
    # numbers a scenario cannot run: refused where they enter, or named with the values set
    (["run", "lease-exhaustion", "--set", "ttl=-5"], "ttl=-5 does not fit: parameter ttl takes int in 0..2**53 (default 1000)"),
    (["run", "lease-normal", "--set", "ttls=Infinity"], "Infinity is not a value alarmkit takes"),
    (["run", "lease-normal", "--set", "ttls=[100, -Infinity]"], "-Infinity is not a value alarmkit takes"),
    (["run", "lease-normal", "--set", "ttls=[1e400]"], "parameter ttls takes list of int in 0..2**53"),
    (["run", "lease-exhaustion", "--set", "ttl=0"],
     "scenario 'lease-exhaustion': ttl=0 is not a period; ttl is a time in ms >= 1"),
    (["run", "lease-ledger", "--set", "status_every_ms=0"],
     "scenario 'lease-ledger': status_every_ms=0 is not a period; status_every_ms is a time in ms >= 1"),
    # text that is not text
    (["run", "lease-ledger", "--set", 'grants=[[0, "\\ud800", 5]]'], "grants=[[0, \"\\ud800\", 5]] does not fit: parameter grants takes list of [int, text, int]"),
    (["run", "lease-normal", "--db", SURROGATE_PATH], "is not valid UTF-8 text; pass another path"),
    # huge text
    (["run", "lease-normal", "--set", "ttls=[" + "1," * 50_000], "--set ttls: '[1,1,1,1,"),
])
def test_hostile_values_are_one_line_and_exit_2(tmp_path, args, fragment):
    last = refused(alarmkit(*args, cwd=tmp_path), fragment)
    assert len(last) < 2_000  # a 100 kB value is not echoed back whole
    assert os.listdir(tmp_path) == []  # nothing made on the way


@pytest.mark.parametrize("out, fragment", [
    ("", "--out is an empty path (\"\"); pass a path, e.g. --out report.html"),
    ("/dev/null", "--out '/dev/null' is not a regular file"),
    ("/proc/alarmkit.html", "No such file or directory: '/proc/alarmkit.html'"),
    ("/sys/alarmkit.html", "Permission denied: '/sys/alarmkit.html'"),  # a folder the kernel refuses to write
])
def test_export_to_places_that_cannot_hold_a_report(tmp_path, journal, out, fragment):
    refused(alarmkit("export", "--db", str(journal), "--run", "1", "--out", out, cwd=tmp_path), fragment)
    assert os.listdir(tmp_path) == []


def test_calibrate_report_to_a_folder_the_kernel_refuses(tmp_path):
    refused(alarmkit("calibrate", "--reference", "--out", "/sys/alarmkit.html"), "Permission denied: '/sys/alarmkit.html'")


def test_export_through_a_symlink_to_a_users_file_leaves_the_file(tmp_path, journal):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    link = tmp_path / "report.html"
    link.symlink_to(notes)
    refused(alarmkit("export", "--db", str(journal), "--run", "1", "--out", str(link)),
            "report.html' exists and was not written by alarmkit")
    assert notes.read_text() == "mine"


def test_demo_out_with_a_symlinked_report_name_leaves_the_users_file(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    out = tmp_path / "reports"
    out.mkdir()
    (out / "lease-revival.html").symlink_to(notes)
    refused(alarmkit("demo", "--db", str(tmp_path / "j.duckdb"), "--out", str(out)),
            "lease-revival.html' exists and is not an alarmkit report")
    assert notes.read_text() == "mine" and not (tmp_path / "j.duckdb").exists()


def test_demo_refuses_a_negative_seed_before_anything(tmp_path):
    refused(alarmkit("demo", "--seed", "-1", "--db", str(tmp_path / "j.duckdb"), "--out", str(tmp_path / "r")),
            "seed must be in 0..2**63-1")
    assert os.listdir(tmp_path) == []


def test_demo_out_that_is_a_device(tmp_path):
    refused(alarmkit("demo", "--db", str(tmp_path / "j.duckdb"), "--out", "/dev/null"),
            "--out '/dev/null' is a file, not a folder")
    assert os.listdir(tmp_path) == []


def test_demo_on_an_immutable_journal_changes_nothing(tmp_path, immutable):  # noqa: F811 - the fixture
    db = tmp_path / "j.duckdb"
    make_journal(db)
    before = digest(db)
    immutable(db)
    refused(alarmkit("demo", "--db", str(db), "--out", str(tmp_path / "r")), "cannot open journal", "Operation not permitted")
    assert digest(db) == before and not (tmp_path / "r").exists()


def test_a_plain_file_named_like_a_journal_in_export(tmp_path):
    fake = tmp_path / "j.duckdb"
    fake.write_bytes(b"\x00" * 4096)
    refused(alarmkit("export", "--db", str(fake), "--run", "1", "--out", str(tmp_path / "r.html")),
            "j.duckdb' is not an alarmkit journal (not a DuckDB file)")
    assert fake.read_bytes() == b"\x00" * 4096


def test_a_duckdb_file_without_alarmkits_tables_is_not_read_as_a_journal(tmp_path):
    import duckdb

    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()  # an empty DuckDB database: a reader finds no journal in it
    before = digest(other)
    refused(alarmkit("export", "--db", str(other), "--run", "1", "--out", str(tmp_path / "r.html")),
            "other.duckdb' holds no alarmkit journal (an empty DuckDB file)")
    assert digest(other) == before


def test_the_console_script_is_this_checkout():
    # the venv's console script (what test_cli_errors' real=True tests run) must import the code under test
    p = alarmkit("demo", "--help", real=True)
    assert p.returncode == 0 and "--fresh" in p.stdout


def test_a_report_from_before_the_generator_tag_is_still_alarmkits_to_replace(tmp_path, journal):
    old = tmp_path / "old.html"  # the head every alarmkit report had before the generator tag
    old.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                   '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'">\n</head></html>\n')
    p = alarmkit("export", "--db", str(journal), "--run", "1", "--out", str(old))
    assert p.returncode == 0, p.stderr
    assert '<meta name="generator" content="alarmkit">' in old.read_text()[:200]
    lookalike = tmp_path / "page.html"  # the same doctype without alarmkit's CSP line is a user's page
    lookalike.write_text('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n<title>mine</title>\n')
    refused(alarmkit("export", "--db", str(journal), "--run", "1", "--out", str(lookalike)),
            "page.html' exists and was not written by alarmkit")
