"""A notebook in a real JupyterLab, in headless Chromium: run every cell, see the explorer widget
and the plots render, move the time slider and change a control, and watch the timeline change.

Bounded: every wait has a timeout, and the server is stopped by its PID in a ``finally`` block.
Set ALARMKIT_SCREENSHOTS=<folder> to keep the screenshots.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "01_lease_ledger_tour.py"
KEEPALIVE = ROOT / "notebooks" / "05_guestbook_keepalive.py"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")
jupytext = pytest.importorskip("jupytext")

BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
# What a plotly figure draws: scatter markers are <path class="point">, lines <path class="js-line">.
MARKS = ".scatterlayer path.point, .scatterlayer path.js-line"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"jupyter lab did not answer {url} within {timeout_s} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server (and the kernels it started: same process group) by its PID."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def lab(tmp_path, request):
    """A JupyterLab server on 127.0.0.1 serving a temp folder that holds the notebook as .ipynb."""
    notebook = getattr(request, "param", NOTEBOOK)
    root = tmp_path / "root"
    root.mkdir()
    nb = jupytext.read(notebook)
    jupytext.write(nb, root / (notebook.stem + ".ipynb"), fmt="ipynb")
    settings = {
        # no "would you like news?" toast over the notebook
        ("apputils-extension", "notification"): {"fetchNews": "false", "checkForUpdates": False},
        # every cell in the DOM (JupyterLab 4 otherwise renders only the cells in view)
        ("notebook-extension", "tracker"): {"windowingMode": "none"},
    }
    with _jupyter_lab(tmp_path, root, settings, {"ALARMKIT_CI": "1", "ALARMKIT_OUT": str(tmp_path / "out")}) as (
            url, token, log):
        yield {"url": url, "token": token, "root": root, "log": log, "notebook": notebook.stem + ".ipynb"}


@contextlib.contextmanager
def _lab_page():
    """A 1400x1000 page of headless Debian Chromium, 60 s default timeouts."""
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            yield page
        finally:
            browser.close()


@contextlib.contextmanager
def _jupyter_lab(tmp_path: Path, root: Path, settings: dict, extra_env: dict):
    """``jupyter lab`` on a free port of 127.0.0.1 serving ``root``, with its config, runtime, settings and
    workspaces under ``tmp_path``; yields (url, token, log) and stops the server (its whole session) after."""
    for (ext, name), values in settings.items():
        folder = tmp_path / "settings" / "@jupyterlab" / ext
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, **{f"JUPYTER{k}_DIR": str(tmp_path / v) for k, v in (
        ("_CONFIG", "config"), ("_RUNTIME", "runtime"), ("LAB_SETTINGS", "settings"), ("LAB_WORKSPACES", "workspaces"))},
        **extra_env}
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "jupyter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", proc, log)
        yield f"http://127.0.0.1:{port}", token, log
    finally:
        _stop(proc)


def _marks(plot) -> int:
    return plot.locator(MARKS).count()


def _legend(plot) -> list[str]:
    """The legend entries (SVG text, so textContent rather than innerText)."""
    return plot.evaluate("e => Array.from(e.querySelectorAll('.legendtext')).map(t => t.textContent)")


def _wait_until(fn, timeout_s: float, what: str, page=None):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        if page is not None:
            page.wait_for_timeout(250)
        else:
            time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")


def test_notebook_runs_in_jupyterlab_and_the_explorer_responds(lab, tmp_path):
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with _lab_page() as page:
        try:
            _drive(page, lab, shots)
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"))
            raise


def _run_all(page, lab: dict, shots: Path) -> None:
    """Open the notebook, Run All Cells, wait for every cell; no cell may print a traceback."""
    page.goto(f"{lab['url']}/lab/tree/{lab['notebook']}?token={lab['token']}", timeout=90_000)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    status_bar = page.locator("#jp-main-statusbar")

    def kernel_idle() -> bool:  # the status bar reads "Python 3 (ipykernel) | Idle" once it is up
        return "(ipykernel) | Idle" in status_bar.inner_text()

    _wait_until(kernel_idle, 90, "the kernel to start", page)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    n_code = _wait_until(lambda: cells.count() > 20 and cells.count(), 30, "every cell in the page", page)
    page.screenshot(path=str(shots / "lab-opened.png"))

    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

    prompts = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt")
    _wait_until(lambda: prompts.first.inner_text().strip() not in ("[ ]:", ""), 30, "Run All to start", page)

    def finished() -> bool:
        texts = [p.strip() for p in prompts.all_inner_texts()]
        return len(texts) == n_code and all(p not in ("[ ]:", "[*]:", "") for p in texts) and kernel_idle()

    _wait_until(finished, 240, "every cell to run", page)
    page.screenshot(path=str(shots / "lab-after-run-all.png"))

    errors = page.locator(".jp-NotebookPanel .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, tracebacks[0][:2000]


def _drive(page, lab: dict, shots: Path) -> None:
    _run_all(page, lab, shots)

    # the static figures (plotly's JupyterLab renderer) drew marks
    static = page.locator(".jp-NotebookPanel .jp-OutputArea-output.jp-RenderedPlotly")
    _wait_until(lambda: static.count() == 4, 60, "the notebook's four plotly figures", page)
    assert _marks(static.first) > 5

    # the explorer: controls, a slider, and its FigureWidget, all rendered by the widget manager
    explorer = page.locator(".jp-NotebookPanel .widget-vbox").last
    explorer.scroll_into_view_if_needed()
    plot = explorer.locator(".js-plotly-plot")
    _wait_until(lambda: plot.count() == 1 and _marks(plot) > 0, 60, "the explorer's FigureWidget", page)
    assert explorer.locator(".widget-slider").count() == 1
    assert explorer.locator("button", has_text="Export HTML").count() == 1
    before = _marks(plot)
    explorer.screenshot(path=str(shots / "explorer-full-run.png"))

    # move the virtual-time slider back to 400 ms: only the first fire has happened by then
    readout = explorer.locator(".widget-slider .widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("400")
    page.keyboard.press("Enter")
    early = _wait_until(lambda: (n := _marks(plot)) < before and n, 30, "the timeline to shrink", page)
    explorer.screenshot(path=str(shots / "explorer-at-400ms.png"))
    assert 0 < early < before

    # change a control: revoke throws once -> the first attempt fails after its effect, the retry
    # runs it again: a retry backoff arrow and a duplicate-effect mark appear
    field = explorer.locator(".widget-inline-hbox", has_text="revoke throws").locator("input")
    field.fill("1")
    field.press("Enter")
    _wait_until(lambda: "duplicate effect" in _legend(plot), 60, "a duplicate effect in the timeline", page)
    explorer.screenshot(path=str(shots / "explorer-revoke-throws.png"))
    assert "retry" in _legend(plot)  # the explorer groups its legend by class (alarmkit._kinds)
    assert _marks(plot) != before
    status = explorer.locator(".alarmkit-status").inner_text()  # below the verdict, the controls and the slider
    assert "2 alarm() attempts" in status and "'lease-0': 2" in status, status


# What the explorer's figure holds and draws: its layout's shapes and annotations, the ones in the
# DOM, the boxes of its title lines and legend, and the plot area.
FIGURE_STATE = """e => {
  const gd = e.querySelector('.js-plotly-plot');
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const legend = gd.querySelector('.legend .bg');
  const area = gd.querySelector('.cartesianlayer .bg, .bglayer .bg, .draglayer .nsewdrag');
  return {
    shapes: (gd.layout.shapes || []).map(s => [s.type, s.x0]).sort(),
    events: gd.data.filter(t => t.meta && t.meta.role === 'events').reduce((n, t) => n + t.x.length, 0),
    annotations: (gd.layout.annotations || []).map(a => a.text),
    drawnShapes: gd.querySelectorAll('.shapelayer path').length,
    drawnAnnotations: Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.textContent),
    titles: Array.from(gd.querySelectorAll('.gtitle, .gtitle-subtitle')).map(box),
    titleLines: Array.from(gd.querySelectorAll('.gtitle tspan.line')).map(box),
    legendRows: new Set(Array.from(gd.querySelectorAll('.legend .traces')).map(
      t => Math.round(t.getBoundingClientRect().top))).size,
    legend: legend ? box(legend) : null,
    area: area ? box(area) : null,
    paper: box(gd),
  };
}"""


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


def _expected(events, t_ms: int) -> dict:
    """From the journal: the restart lines and downtime bands up to ``t_ms`` (seconds on the axis)."""
    restarts = events[(events.kind == "restart") & (events.t_ms <= t_ms)]
    if (events.t_ms <= t_ms).sum() == 0:
        return {"shapes": [], "annotations": [f"nothing has happened by {t_ms / 1000:.3f} s"], "events": 0}
    shapes = sorted([("line", t / 1000) for t in restarts.t_ms] + [("rect", t / 1000) for t in restarts.t_ms])
    return {"shapes": [list(s) for s in shapes], "annotations": [], "events": int((events.t_ms <= t_ms).sum())}


@pytest.mark.parametrize("lab", [KEEPALIVE], indirect=True)
def test_the_explorer_draws_exactly_the_journal_up_to_the_slider(lab, tmp_path):
    """Notebook 05's explorer (guestbook-crash-loop, restart at 300 s): after Run All and after each
    slider move, its shapes and annotations are those of the journal up to that time; the title
    lines do not overlap and the legend fits the widget in three rows at most."""
    import alarmkit as ak

    # made as the explorer makes its run: its "fire latency (ms)" control starts at 2, an exact 2 ms
    exact = ak.PROFILES["workerd"].replace(fire_latency="exact")
    events = ak.run_scenario("guestbook-crash-loop", seed=0, profile=exact).sim.events()
    shots = Path(os.environ.get("ALARMKIT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with _lab_page() as page:
        console = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        try:
            _run_all(page, lab, shots)
            explorer = page.locator(".jp-NotebookPanel .widget-vbox").last
            explorer.scroll_into_view_if_needed()
            plot = explorer.locator(".js-plotly-plot")
            _wait_until(lambda: plot.count() == 1 and _marks(plot) > 0, 60, "the explorer's FigureWidget", page)
            end = int(events.t_ms.max())
            readout = explorer.locator(".widget-slider .widget-readout")
            for i, t_ms in enumerate((end, 200_000, 400, end, 301_000)):
                if i:  # the first look is right after Run All
                    readout.click()
                    page.keyboard.press("Control+A")
                    page.keyboard.type(str(t_ms))
                    page.keyboard.press("Enter")
                want = _expected(events, t_ms)

                def settled():
                    s = explorer.evaluate(FIGURE_STATE)
                    same = all(s[k] == want[k] for k in ("shapes", "annotations", "events"))
                    return s if same and s["drawnShapes"] == len(want["shapes"]) else None

                try:
                    state = _wait_until(settled, 30, f"the figure at {t_ms} ms to hold {want}", page)
                except AssertionError:
                    raise AssertionError(f"at {t_ms} ms: {explorer.evaluate(FIGURE_STATE)} != {want}") from None
                assert state["drawnAnnotations"] == want["annotations"]
                boxes = state["titles"] + state["titleLines"]
                assert state["titles"] and not any(
                    _overlap(a, b) for i, a in enumerate(state["titleLines"]) for b in state["titleLines"][i + 1:])
                assert not any(_overlap(a, b) for i, a in enumerate(state["titles"]) for b in state["titles"][i + 1:])
                if state["area"]:  # the title sits above the plot area
                    assert max(b[3] for b in boxes) <= state["area"][1] + 1, (boxes, state["area"])
                if state["legend"]:
                    assert state["legendRows"] <= 3, state
                    assert state["legend"][2] <= state["paper"][2] + 1, state
                shot = shots / f"explorer-nb05-at-{t_ms}ms.png"
                explorer.screenshot(path=str(shot))
                print(f"screenshot: {shot}")
        except BaseException:
            page.screenshot(path=str(shots / "failure.png"))
            print(f"screenshot: {shots / 'failure.png'}")
            print("\n".join(console[-30:]))
            raise


# -- a double-click opens notebooks/*.py as a notebook  --------------------------------------
LAB_OVERRIDES = Path(sys.prefix, "share", "jupyter", "lab", "settings", "overrides.d", "alarmkit-notebooks.json")


def test_double_click_opens_a_py_notebook_as_a_notebook(tmp_path):
    """In the Lab that dev.py sets up (this interpreter's), a double-click on notebooks/*.py in the file
    browser opens a notebook panel with the notebook's cells, not the text editor."""
    if not LAB_OVERRIDES.exists():
        pytest.skip(f"no {LAB_OVERRIDES}: this environment was not set up by dev.py (python3 dev.py lab writes it)")
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / NOTEBOOK.name).write_text(NOTEBOOK.read_text(encoding="utf-8"), encoding="utf-8")
    cells = len(jupytext.read(NOTEBOOK).cells)
    settings = {("apputils-extension", "notification"): {"fetchNews": "false", "checkForUpdates": False}}
    with _jupyter_lab(tmp_path, root, settings, {}) as (url, token, _log):
        with _lab_page() as page:
            page.goto(f"{url}/lab/tree/notebooks?token={token}", timeout=90_000)
            item = page.locator(".jp-DirListing-item", has_text=NOTEBOOK.name)
            item.wait_for(timeout=90_000)
            item.dblclick()
            panel = page.locator(".jp-NotebookPanel")
            panel.first.wait_for(timeout=60_000)
            _wait_until(lambda: panel.first.locator(".jp-Cell").count() >= cells, 60, f"{cells} cells", page)
            assert page.locator(".jp-FileEditor:visible").count() == 0, "the .py also opened in a text editor"
            tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
            assert tab.first.inner_text() == NOTEBOOK.name
            shots = os.environ.get("ALARMKIT_SCREENSHOTS")
            if shots:
                page.screenshot(path=str(Path(shots) / "double-click-notebook.png"))
