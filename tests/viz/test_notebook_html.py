"""Executed notebooks exported to HTML keep their figures, offline .

The first tests check the renderer alone (no kernel): each figure's ``text/html`` beside the plotly
mimetype, plotly.js once per session, markup kept inside data. The browser tests export real
notebooks the standard way, ``jupytext --to ipynb`` then nbconvert, and open the pages in headless
Debian Chromium with every non-file request aborted and counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from alarmkit.viz import _notebook
from alarmkit.viz.bundle import NBCONVERT_OFFLINE

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
PLOTLYJS = "* plotly.js v"  # the banner at the top of plotly.min.js
SHARED = '<script src="plotly.min.js"></script>'  # ... or the file of it beside the notebook (alarmkit/viz/_plotlyjs.py)


def carries(html: str) -> bool:
    """Whether a figure's HTML loads plotly.js: inline, or from the shared file."""
    return PLOTLYJS in html or SHARED in html
HOSTILE = "</script><script>window.__pwned=1</script><!--"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM} (apt-get install chromium)")


@pytest.fixture
def session(monkeypatch, tmp_path):
    """A fresh kernel session for the renderer, working in ``tmp_path``: no plotly.js carried yet.
    ``session(cell, deleted)`` is JupyterLab starting to run a cell (IPython's pre_run_cell event)."""
    monkeypatch.chdir(tmp_path)  # the kernel's folder: plotly.min.js is written here
    monkeypatch.setattr(_notebook, "_in_kernel", lambda: True)  # as IPython's ZMQ shell would be
    monkeypatch.setattr(_notebook, "_CARRIER", [])
    monkeypatch.setattr(_notebook, "_RUNNING", [])

    def run_cell(cell=None, deleted=()):
        _notebook._on_run_cell(types.SimpleNamespace(cell_id=cell, cell_meta={"deletedCells": list(deleted)}))
    return run_cell


def _figure(name: str = "lease-0") -> go.Figure:
    return go.Figure(go.Scatter(x=[0, 1_000, 2_000], y=[1, 2, 3], name=name), layout=dict(height=300))


def _data_of(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1))


def test_figure_html_holds_the_figure_as_data_and_no_markup(session):
    html = _notebook.figure_html(_figure(HOSTILE).to_dict(), with_plotlyjs=False)
    assert "__pwned" in html and "<script>window.__pwned" not in html and "<!--" not in html
    assert html.count("</script>") == 2  # the data block and the drawing script: nothing else closes a script
    data = _data_of(html)
    assert data["data"][0]["name"] == HOSTILE
    assert data["layout"]["height"] == 300 and 'style="height:300px; width:100%;"' in html
    assert PLOTLYJS not in html and "cdn" not in html.lower() and "mathjax" not in html.lower()


def _carries(r) -> bool:
    return carries(r.to_mimebundle(_figure().to_dict())["text/html"])


def test_the_carrier_loads_one_tagged_plotlyjs_beside_the_notebook(session, tmp_path):
    from alarmkit.viz.pages import PLOTLY_TAG

    r = _notebook.OfflineHtmlRenderer()
    session(None)
    html = r.to_mimebundle(_figure().to_dict())["text/html"]
    assert SHARED in html and PLOTLYJS not in html and len(html) < 20_000  # the figure, not the 4.8 MB
    text = (tmp_path / "plotly.min.js").read_text(encoding="utf-8")
    assert text.startswith(PLOTLY_TAG) and PLOTLYJS in text[:500]


def test_outside_a_kernel_the_carrier_is_standalone_and_nothing_is_written(session, tmp_path, monkeypatch):
    monkeypatch.setattr(_notebook, "_in_kernel", lambda: False)  # a script, a test, a still asked for outside Lab
    session(None)
    html = _notebook.OfflineHtmlRenderer().to_mimebundle(_figure().to_dict())["text/html"]
    assert PLOTLYJS in html and SHARED not in html and list(tmp_path.iterdir()) == []


def test_a_plotlyjs_not_alarmkits_is_kept_and_the_figure_carries_it_inline(session, tmp_path):
    mine = tmp_path / "plotly.min.js"
    mine.write_text("/* my pinned plotly */", encoding="utf-8")
    r = _notebook.OfflineHtmlRenderer()
    session(None)
    html = r.to_mimebundle(_figure().to_dict())["text/html"]
    assert PLOTLYJS in html and SHARED not in html
    assert mine.read_text(encoding="utf-8") == "/* my pinned plotly */"


def test_plotlyjs_once_per_session_and_again_when_its_cell_reruns_or_goes(session):
    r = _notebook.OfflineHtmlRenderer()
    session("c1")
    assert [_carries(r), _carries(r)] == [True, False]  # c1's first figure carries it, its second does not
    session("c2")
    assert not _carries(r)  # another cell: the page already has plotly.js
    session("c1")  # c1 re-run: its old outputs, plotly.js with them, are gone; it shows no figure this time
    session("c3")
    assert [_carries(r), _carries(r)] == [True, False]
    session("c4")
    assert not _carries(r)
    session("c5", deleted=["c3"])  # the carrier deleted: JupyterLab says so with the next run
    assert _carries(r)


def test_without_cell_ids_plotlyjs_travels_once(session):
    """nbclient (nbconvert --execute) sends no cell ids: one copy, in the first figure."""
    r = _notebook.OfflineHtmlRenderer()
    carried = []
    for _ in range(3):
        session(None)
        carried += [_carries(r), _carries(r)]
    assert carried == [True, False, False, False, False, False]


@pytest.fixture
def fake_kernel(monkeypatch, session):
    """plotly's own Jupyter default, an IPython whose shell is a ZMQInteractiveShell, no PLOTLY_RENDERER."""
    shell = type("ZMQInteractiveShell", (), {})()
    shell.events = types.SimpleNamespace(hooks=[], register=lambda name, fn: shell.events.hooks.append((name, fn)))
    monkeypatch.setattr(_notebook, "_fake_shell", shell, raising=False)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    before = pio.renderers.default
    pio.renderers.default = "plotly_mimetype"
    yield
    pio.renderers.default = before


def test_in_a_kernel_figures_carry_the_plotly_mimetype_and_html(fake_kernel):
    assert _notebook.use_in_jupyter() is True
    assert pio.renderers.default == "plotly_mimetype+alarmkit_html"
    assert _notebook._fake_shell.events.hooks == [("pre_run_cell", _notebook._on_run_cell)]
    bundle = _figure()._repr_mimebundle_()
    assert set(bundle) == {PLOTLY_MIME, "text/html"}
    assert bundle[PLOTLY_MIME]["data"][0]["name"] == _data_of(bundle["text/html"])["data"][0]["name"] == "lease-0"
    assert _notebook.use_in_jupyter() is False  # already set: nothing to change


def test_a_chosen_renderer_is_left_alone(fake_kernel, monkeypatch):
    pio.renderers.default = "plotly_mimetype+notebook"
    assert _notebook.use_in_jupyter() is False and pio.renderers.default == "plotly_mimetype+notebook"
    pio.renderers.default = "plotly_mimetype"
    monkeypatch.setenv("PLOTLY_RENDERER", "plotly_mimetype")  # the documented way out
    assert _notebook.use_in_jupyter() is False and pio.renderers.default == "plotly_mimetype"


def test_outside_a_kernel_nothing_changes(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    before = pio.renderers.default
    assert _notebook.use_in_jupyter() is False and pio.renderers.default == before
    assert "alarmkit_html" in pio.renderers


def _execute(kc, code: str, cell: str, deleted=()) -> list[dict]:
    """One cell run as JupyterLab sends it (its id, and the cells deleted since, in the metadata)."""
    msg = kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                             "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
                         metadata={"cellId": cell, "deletedCells": list(deleted)})
    kc.shell_channel.send(msg)
    outputs = []
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        assert m["msg_type"] != "error", "\n".join(m["content"]["traceback"])
        if m["msg_type"] in ("display_data", "execute_result"):
            outputs.append(m["content"]["data"])
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return outputs


@pytest.mark.slow
def test_in_a_real_kernel_plotlyjs_follows_the_cells_as_jupyterlab_runs_them(tmp_path):
    manager = pytest.importorskip("jupyter_client.manager")
    km, kc = manager.start_new_kernel(kernel_name="python3", cwd=str(tmp_path),
                                      env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _execute(kc, "import plotly.graph_objects as go\nimport alarmkit.plots", "imports")
        fig = "go.Figure(go.Bar(x=['a'], y=[1]))"

        def carried(code: str, cell: str, deleted=()) -> list[bool]:
            figures = [o for o in _execute(kc, code, cell, deleted) if PLOTLY_MIME in o]
            assert all(set(o) == {PLOTLY_MIME, "text/html"} for o in figures), [set(o) for o in figures]
            return [carries(o["text/html"]) for o in figures]

        assert carried(f"display({fig})\n{fig}", "a") == [True, False]
        assert carried(fig, "b") == [False]
        assert carried("1", "a") == []  # a re-run: its figure output, plotly.js in it, is gone
        assert carried(fig, "b") == [True]
        assert carried(fig, "c", deleted=["b"]) == [True]  # the carrier cell deleted
        assert carried(fig, "d") == [False]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# -- in a browser --------------------------------------------------------------------------

def open_offline(browser, path: Path, plots: int) -> dict:
    """Open ``path`` with the network off; wait until ``plots`` plots have drawn (or 30 s).
    Returns the plots drawn, the page errors, console errors and the requests that tried to leave."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    left, errors, console = [], [], []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.goto(path.resolve().as_uri(), wait_until="load")
    try:
        page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
                               arg=plots, timeout=30_000, polling=100)
    except Exception:  # fewer plots than expected: the count below says how many
        pass
    drawn = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(
        g => g.querySelectorAll('.main-svg').length > 0 && g.querySelectorAll('g.trace, g.hm, image').length)""")
    pwned = page.evaluate("() => window.__pwned === 1")
    page.close()
    return {"drawn": drawn, "errors": errors, "console": console, "left": left, "pwned": pwned}


@pytest.mark.browser
@needs_chromium
def test_a_figure_drawn_before_plotlyjs_arrives_still_draws(browser, session, tmp_path):
    """Cells run out of order can leave plotly.js in a later output: earlier figures wait for the page."""
    r = _notebook.OfflineHtmlRenderer()
    session("c9")
    late_carrier = r.to_mimebundle(_figure("second").to_dict())["text/html"]
    session("c1")
    early = r.to_mimebundle(_figure(HOSTILE).to_dict())["text/html"]
    assert carries(late_carrier) and not carries(early)  # the page beside the kernel's plotly.min.js
    page = tmp_path / "page.html"
    page.write_text(f"<!doctype html><meta charset=utf-8><body>{early}\n{late_carrier}</body>", encoding="utf-8")
    seen = open_offline(browser, page, 2)
    assert len(seen["drawn"]) == 2 and all(seen["drawn"]), seen
    assert seen["errors"] == [] and seen["console"] == [] and seen["left"] == [] and not seen["pwned"]


def _jupyter(*args: str, cwd: Path) -> str:
    env = {**os.environ, "ALARMKIT_CI": "1", "ALARMKIT_OUT": str(cwd / "out"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stderr


def _figure_outputs(nb) -> list[dict]:
    """Outputs holding a figure: the plotly mimetype, or HTML with a plotly div (a widget's still)."""
    return [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if PLOTLY_MIME in o.get("data", {}) or "plotly-graph-div" in o.get("data", {}).get("text/html", "")]


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("name", ["02_retries_exhaustion_revival", "07_querying_the_journal"])
def test_standard_nbconvert_export_draws_every_figure_offline(browser, tmp_path, name):
    """``jupytext --to ipynb``, ``jupyter nbconvert --to notebook --execute`` (the preprocessor of
    ``--to html --execute``, keeping the executed notebook so its figures can be counted), then
    ``jupyter nbconvert --to html`` twice: with the offline settings, and with nbconvert's defaults."""
    nbformat = pytest.importorskip("nbformat")
    _jupyter("jupytext", "--to", "ipynb", str(ROOT / "notebooks" / f"{name}.py"), "-o", f"{name}.ipynb", cwd=tmp_path)
    _jupyter("jupyter", "nbconvert", "--to", "notebook", "--execute", f"{name}.ipynb", "--output", "executed",
             *[f for f in NBCONVERT_OFFLINE if f.startswith("--Execute")], cwd=tmp_path)
    nb = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    figures = _figure_outputs(nb)
    plotly_outputs = [d for d in figures if PLOTLY_MIME in d]
    assert len(plotly_outputs) >= 2
    assert all("plotly-graph-div" in d.get("text/html", "") for d in plotly_outputs), "a figure has no HTML copy"
    assert [carries(d["text/html"]) for d in plotly_outputs] == [True] + [False] * (len(plotly_outputs) - 1)
    # the carrier loads the shared file beside the notebook: lean outputs (5.2 MB and 10.7 MB before)
    assert SHARED in plotly_outputs[0]["text/html"] and (tmp_path / "plotly.min.js").exists()
    assert (tmp_path / "executed.ipynb").stat().st_size < 1_000_000

    stderr = _jupyter("jupyter", "nbconvert", "--to", "html", "executed.ipynb", "--output", "offline",
                      *[f for f in NBCONVERT_OFFLINE if f.startswith("--HTML")], cwd=tmp_path)
    assert "not able to be represented" not in stderr
    seen = open_offline(browser, tmp_path / "offline.html", len(figures))
    assert len(seen["drawn"]) == len(figures) and all(seen["drawn"]), seen["drawn"]
    assert seen["errors"] == [] and seen["console"] == [] and seen["left"] == []

    _jupyter("jupyter", "nbconvert", "--to", "html", "executed.ipynb", "--output", "defaults", cwd=tmp_path)
    seen = open_offline(browser, tmp_path / "defaults.html", len(figures))
    assert len(seen["drawn"]) == len(figures) and all(seen["drawn"]) and seen["errors"] == []
    from nbconvert import HTMLExporter  # with its defaults nbconvert's own page asks cdnjs for these two, no more

    assert sorted(seen["left"]) == sorted([HTMLExporter().require_js_url, HTMLExporter().mathjax_url])
