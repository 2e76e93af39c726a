"""Hostile input to install_project (a worker project with npm dependencies, installed into a cache folder):
a missing folder, a folder without a lock file, a lock file npm refuses, generated folder names. Each is a
JsHostError with one clean line naming the folder; nothing is marked installed after a failed install."""

import re
import shutil

import pytest

from alarmkit.errors import JsHostError
from alarmkit.workers.js.projects import install_project

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the dev extra brings it
    given = None

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ALARMKIT_PROJECTS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and not CONTROL.search(text), repr(text)
    return text


def test_a_missing_folder_and_a_folder_without_a_lock_file(tmp_path):
    with pytest.raises(JsHostError) as e:
        install_project(tmp_path / "nope")
    assert one_line(e.value) == f"no project folder {str(tmp_path / 'nope')!r}"
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "package.json").write_text("{}")
    with pytest.raises(JsHostError, match=r"has no package.json and package-lock.json: pin the project's packages"):
        install_project(tmp_path / "p")


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_a_lock_file_npm_refuses_is_one_line_and_nothing_is_marked_installed(tmp_path, cache):
    p = tmp_path / "broken"
    p.mkdir()
    (p / "package.json").write_text('{"name": "broken", "private": true, "dependencies": {"left-pad": "1.3.0"}}')
    (p / "package-lock.json").write_text("{ this is not json")
    with pytest.raises(JsHostError) as e:
        install_project(p)
    assert one_line(e.value).startswith(f"`npm ci` of {str(p)!r} failed (exit ")
    assert not list(cache.glob("*/.alarmkit-installed"))
    (p / "node_modules").mkdir()   # the project's own node_modules and dot-folders are never copied
    (p / "node_modules" / "x.js").write_text("")
    with pytest.raises(JsHostError):
        install_project(p)
    assert not list(cache.glob("*/node_modules/x.js"))


if given is not None:
    @settings(max_examples=25, deadline=None)
    @given(st.text(min_size=1, max_size=30).filter(lambda s: "/" not in s and "\x00" not in s and s not in (".", "..")))
    def test_generated_folder_names_are_one_line(name):
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as d:
            with pytest.raises(JsHostError) as e:
                install_project(Path(d) / name)
            text = str(e.value)
            assert text.startswith("no project folder ") and "\n" not in text and not CONTROL.search(text)
