"""The teaching bundle: ``alarmkit notebooks --html DIR`` (and ``python3 dev.py notebooks``).

A real notebook with CI parameters (07, about 10 s of CPU) is built through the console script and
opened offline in headless Chromium; small notebooks written here check escaping, the kernel's
environment, rebuilding, and that the command never replaces a file it did not write.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from alarmkit.viz.bundle import MANIFEST, build_bundle, find_notebooks
from alarmkit.errors import AlarmkitError

pytest.importorskip("jupytext")
pytest.importorskip("nbclient")
pytest.importorskip("nbconvert")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
TITLE = '1 · <script>alert("t")</script> & co'
NOTEBOOK = textwrap.dedent('''\
    # %% [markdown]
    # # {title}
    #
    # First <b>sentence</b> & more. Second sentence.

    # %%
    import os
    from pathlib import Path

    import plotly.graph_objects as go

    import alarmkit.plots

    # %%
    Path(os.environ["ALARMKIT_OUT"]).mkdir(parents=True, exist_ok=True)
    (Path(os.environ["ALARMKIT_OUT"]) / "scratch.txt").write_text("x")
    print("ci=" + os.environ.get("ALARMKIT_CI", "unset"), "cwd-is-source=" + str(Path.cwd() == Path({src!r})))

    # %%
    {last}
    ''')


def _write(folder: Path, name: str, last: str = "go.Figure(go.Bar(x=['a', 'b'], y=[1, 2]))", title: str = TITLE):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(NOTEBOOK.format(title=title, src=str(folder), last=last), encoding="utf-8")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "alarmkit", "notebooks", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_find_notebooks_by_number_or_name(tmp_path):
    for name in ("01_a.py", "02_b.py", "helper.py", "3_c.py"):
        _write(tmp_path, name)
    assert [p.name for p in find_notebooks(tmp_path)] == ["01_a.py", "02_b.py"]
    assert [p.name for p in find_notebooks(tmp_path, ["02", "01_a"])] == ["01_a.py", "02_b.py"]
    with pytest.raises(AlarmkitError, match=r"^no notebook \['9'\] in .*notebooks: \['01_a', '02_b'\]"):
        find_notebooks(tmp_path, ["9"])
    with pytest.raises(AlarmkitError, match=r"^no notebooks \(NN_name.py\) in .*pass --from DIR$"):
        find_notebooks(tmp_path / "nothing")


@pytest.mark.slow
def test_build_escapes_passes_the_environment_and_rebuilds_only_its_own_files(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ALARMKIT_CI", raising=False)
    src, out = tmp_path / "nbs", tmp_path / "bundle"
    _write(src, "01_hostile.py")
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    source_before = _tree(src)

    bundle = build_bundle(out, source=src, ci=True, progress=False)
    assert [p.html.name for p in bundle.pages] == ["01_hostile.html"] and bundle.pages[0].figures == 1
    assert bundle.pages[0].title == TITLE and bundle.pages[0].summary == "First <b>sentence</b> & more."
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in index and "<b>" not in index
    assert "1 · &lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt; &amp; co" in index
    assert index.count("<li>") == 1 and 'href="01_hostile.html"' in index
    page = (out / "01_hostile.html").read_text(encoding="utf-8")
    assert "ci=1 cwd-is-source=False" in page  # --ci reached the kernel, which ran in a temporary folder
    assert "* plotly.js v" not in page and "* plotly.js v" in (out / "plotly.min.js").read_text()  # shared, once
    # require.js, MathJax: blanked; plotly.js from the file beside the page
    assert re.findall(r'<script[^>]*\ssrc="([^"]*)"', page) == ["", "", "plotly.min.js"]
    assert 'import("https:' not in page and "elkUrl = \"https:" not in page  # mermaid too, were there diagrams
    assert _tree(src) == source_before  # nothing written beside the notebooks (ALARMKIT_OUT was elsewhere)
    assert sorted(_tree(out)) == sorted([MANIFEST, "01_hostile.html", "index.html", "marks.html", "plotly.min.js",
                                         "notes.txt"])
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(json.loads((out / MANIFEST).read_text())["files"]) == ["01_hostile.html", "index.html", "marks.html",
                                                                       "plotly.min.js"]

    capsys.readouterr()
    build_bundle(out, source=src, ci=False, progress=True)  # its own files: replaced
    assert "ci=unset" in (out / "01_hostile.html").read_text(encoding="utf-8")
    bars = capsys.readouterr().err  # tqdm: one bar over the notebooks, one over the running one's cells
    assert "notebooks: 100%" in bars and "1/1" in bars and "01_hostile:" in bars and "cell/s" in bars

    (out / "index.html").write_text("edited by hand")
    with pytest.raises(AlarmkitError, match=r"index.html changed since `alarmkit notebooks` wrote it; move it away"):
        build_bundle(out, source=src, progress=False)
    assert (out / "index.html").read_text() == "edited by hand"


@pytest.mark.slow
def test_cli_errors_are_messages_with_exit_code_2(tmp_path):
    src, out = tmp_path / "nbs", tmp_path / "bundle"
    _write(src, "01_hostile.py")
    out.mkdir()
    (out / "01_hostile.html").write_text("a page of mine")  # same name, not written by the command
    p = _cli("--html", str(out), "--from", str(src), cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "01_hostile.html exists and was not written by `alarmkit notebooks`; move it away" in p.stderr
    assert _tree(out) == {"01_hostile.html": b"a page of mine"}  # refused before running anything

    for args, text in [(["--only", "7"], "no notebook ['7'] in"), (["--timeout", "0"], "timeout is seconds per cell"),
                       (["--timeout", "x"], "argument --timeout: invalid int value")]:
        p = _cli("--html", str(tmp_path / "other"), "--from", str(src), *args, cwd=tmp_path)
        assert p.returncode == 2 and text in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = _cli("--html", str(out / "01_hostile.html"), "--from", str(src), cwd=tmp_path)
    assert p.returncode == 2 and "is a file, not a folder" in p.stderr

    _write(src, "02_broken.py", last="raise ValueError('boom')")
    p = _cli("--html", str(tmp_path / "b2"), "--from", str(src), "--only", "02", "--json", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "alarmkit: error: 02_broken.py: a cell failed with ValueError: boom; open the notebook" in p.stderr
    _write(src, "03_dies.py", last="os._exit(3)")
    p = _cli("--html", str(tmp_path / "b3"), "--from", str(src), "--only", "03", "--json", cwd=tmp_path)
    assert p.returncode == 2 and "alarmkit: error: 03_dies.py: the kernel died" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_dev_py_notebooks_maps_out_to_html(monkeypatch):
    spec = importlib.util.spec_from_file_location("dev_under_test", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    calls = []
    monkeypatch.setattr(dev, "ensure_env", lambda extras: calls.append(("env", extras)) or dev.Env())
    monkeypatch.setattr(dev, "run", lambda cmd, **kw: calls.append([str(c) for c in cmd]) or 0)
    assert dev.main(["notebooks"]) == 0
    assert dev.main(["notebooks", "--out", "site", "--only", "02", "--ci"]) == 0
    assert dev.main(["notebooks", "--out=site"]) == 0
    exe = str(dev.Env().bin / "alarmkit")
    assert calls == [("env", "notebooks"), [exe, "notebooks", "--html", "notebooks-html"],
                     ("env", "notebooks"), [exe, "notebooks", "--html", "site", "--only", "02", "--ci"],
                     ("env", "notebooks"), [exe, "notebooks", "--html=site"]]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)")
def test_bundle_of_a_real_notebook_opens_offline(tmp_path):
    """The console script builds notebook 07 (CI parameters); its page and the index open with the
    network off: every figure drawn, no page error, no request leaving the file."""
    from test_notebook_html import open_offline  # the same offline browser visit

    sync_api = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "bundle"
    notebooks_before = _tree(ROOT / "notebooks")
    p = _cli("--html", str(out), "--only", "07", "--ci", "--json", cwd=ROOT)
    assert p.returncode == 0, p.stderr[-4000:]
    result = json.loads(p.stdout)
    [page] = result["pages"]
    assert page["html"].endswith("07_querying_the_journal.html") and page["figures"] >= 2
    assert result["bytes"] == sum(f.stat().st_size for f in out.iterdir() if f.name != MANIFEST)
    assert _tree(ROOT / "notebooks") == notebooks_before
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            seen = open_offline(browser, Path(page["html"]), page["figures"])
            index = open_offline(browser, out / "index.html", 0)
        finally:
            browser.close()
    assert len(seen["drawn"]) == page["figures"] and all(seen["drawn"]), seen["drawn"]
    assert seen["errors"] == seen["console"] == seen["left"] == []
    assert index["errors"] == index["console"] == index["left"] == [] and index["drawn"] == []
