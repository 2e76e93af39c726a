"""An untouched notebook opens clean in the Lab ``dev.py lab`` starts (alarmkit.viz._lab's contents manager),
and the same notebook opens marked unsaved without it: real JupyterLab, headless Chromium, the .py as
it is in notebooks/ (opened with jupytext's notebook viewer, as dev.py's settings do)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_jupyterlab_browser import BROWSER_ARGS, CHROMIUM, _free_port, _stop, _wait_for_server

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("alarmkit_dev_clean", ROOT / "dev.py")
dev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dev)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no {CHROMIUM} (apt-get install chromium)"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")
NOTEBOOK = ROOT / "notebooks" / "01_lease_ledger_tour.py"


def _dirty_after_kernel(tmp_path: Path, with_contents: bool) -> list[str]:
    """Serve a copy of notebooks/01 and pyproject.toml; open it, wait for the kernel to be idle and 2 s
    more; return the tab titles marked dirty."""
    root = tmp_path / "root"
    root.mkdir(parents=True)
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")  # jupytext's config, as in the repo
    dev.ensure_lab_settings(tmp_path)
    port, token = _free_port(), "c" * 32
    env = {**os.environ, "PYTHONPATH": str(ROOT), **{f"JUPYTER{k}_DIR": str(tmp_path / v) for k, v in (
        ("_CONFIG", "config"), ("_RUNTIME", "runtime"), ("LAB_SETTINGS", "user-settings"),
        ("LAB_WORKSPACES", "workspaces"))}}
    args = dev.lab_arguments(["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                              f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                              f"--LabApp.app_settings_dir={tmp_path / dev.LAB_OVERRIDES.parent.parent}"])
    if not with_contents:
        args = [a for a in args if not a.startswith("--ServerApp.contents_manager_class")]
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=root)
    try:
        _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", proc, log)
        with playwright_sync.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS, timeout=60_000)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.name}?token={token}", timeout=90_000)
                page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
                page.wait_for_function("() => (document.querySelector('#jp-main-statusbar') || {}).innerText"
                                       "?.includes('| Idle')", timeout=90_000, polling=250)
                page.wait_for_timeout(2_000)
                return page.evaluate("() => Array.from(document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty'))"
                                     ".map(t => t.innerText.trim())")
            finally:
                browser.close()
    finally:
        _stop(proc)


def test_an_untouched_notebook_opens_clean(tmp_path):
    assert _dirty_after_kernel(tmp_path / "with", True) == []


def test_without_the_contents_manager_it_opens_dirty(tmp_path):
    """The cause, kept visible: the kernel's language_info is written into a notebook that had none."""
    assert _dirty_after_kernel(tmp_path / "without", False) == [NOTEBOOK.name]
