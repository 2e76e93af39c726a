"""The teaching bundle: every notebook executed and exported to HTML, plus an index page.

    alarmkit notebooks --html notebooks-html/      # or: python3 dev.py notebooks --out notebooks-html/

Each notebook in the source folder (py:percent text, ``NN_name.py``) is read by jupytext, executed
by nbclient in a fresh ``python3`` kernel (working folder and ``ALARMKIT_OUT`` in a temporary
folder, so nothing is written beside the notebooks) and exported by nbconvert's ``lab`` template
with the settings of ``NBCONVERT_OFFLINE``, so a page loads nothing from the network. Figures draw
offline because ``alarmkit.plots`` gives them an HTML copy with plotly.js once per page (see
``alarmkit._notebook``).

The bundle is a handout (``alarmkit._handout``): the index is a learning path, every page has
contents, previous/next links, the glossary of marks (``marks.html``) linked under each figure, the
source of its scenario and exercises with hidden answers; plotly.js is one shared ``plotly.min.js``.

The command writes only its own files: ``NN_name.html`` per notebook, ``index.html``, ``marks.html``,
``plotly.min.js`` and ``.alarmkit-notebooks.json``, the manifest of what it wrote (name and SHA-256). It overwrites a
file only when the manifest says it wrote it and the file is unchanged since; it deletes nothing.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from .._files import write_bytes, write_text
from ..errors import AlarmkitError
from ._handout import EXERCISES, GLOSSARY, PLOTLY_FILE, decorate, glossary_page, index_page, learning_paragraph, scenario_of

__all__ = ["NBCONVERT_OFFLINE", "MANIFEST", "Page", "Bundle", "find_notebooks", "build_bundle"]

# nbconvert's lab template loads require.js and MathJax from cdnjs, mermaid from cdnjs when a
# cell has a diagram, and the widget manager from unpkg when widget state is stored. None of the
# notebooks needs them (no math, no diagrams, and widgets cannot run without a kernel: a widget's
# output falls back to its HTML or text), so the bundle blanks every URL and stores no widget state.
# For the command line: jupyter nbconvert --to html --execute NOTEBOOK.ipynb + these flags.
_OFFLINE_HTML = {"require_js_url": "", "mathjax_url": "", "mermaid_js_url": "", "mermaid_layout_elk_js_url": ""}
NBCONVERT_OFFLINE = (*(f"--HTMLExporter.{k}=" for k in _OFFLINE_HTML), "--ExecutePreprocessor.store_widget_state=False")
MANIFEST = ".alarmkit-notebooks.json"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
_NAME = re.compile(r"^[0-9][0-9]_[A-Za-z0-9_]+\.py$")


@dataclass(frozen=True)
class Page:
    """One exported notebook: its source, page, title, one-line summary and size."""
    source: Path
    html: Path
    title: str
    summary: str
    figures: int
    bytes: int
    seconds: float


@dataclass(frozen=True)
class Bundle:
    """What ``build_bundle`` wrote: the pages (in notebook order) and the index page."""
    out: Path
    index: Path
    pages: list[Page] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        """The whole bundle: the pages, the index, the glossary and the one shared plotly.js."""
        shared = sum((self.out / n).stat().st_size for n in (GLOSSARY, PLOTLY_FILE) if (self.out / n).exists())
        return sum(p.bytes for p in self.pages) + self.index.stat().st_size + shared


def find_notebooks(source: str | Path = "notebooks", only: Iterable[str] | None = None) -> list[Path]:
    """The ``NN_name.py`` notebooks in ``source``, in order; ``only`` keeps those whose number or
    name is listed (``["02", "07_querying_the_journal"]``)."""
    src = Path(source)
    found = sorted(p for p in src.glob("*.py") if _NAME.match(p.name)) if src.is_dir() else []
    if not found:
        raise AlarmkitError(f"no notebooks (NN_name.py) in {src}/; run from the alarmkit checkout or pass --from DIR")
    if only is None:
        return found
    wanted = [w.strip() for w in only if w.strip()]
    known = {p.name[:2] for p in found} | {p.stem for p in found} | {p.name for p in found}
    bad = [w for w in wanted if w not in known]
    if bad or not wanted:
        raise AlarmkitError(f"no notebook {bad or wanted} in {src}/; notebooks: {[p.stem for p in found]} "
                            "(give numbers like 02 or names)")
    return [p for p in found if {p.name[:2], p.stem, p.name} & set(wanted)]


def _title_and_summary(nb) -> tuple[str, str]:
    """The first markdown cell's heading, and the first sentence of its first paragraph."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    lines = first.splitlines()
    title = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#")), "")
    body = "\n".join(ln.strip() for ln in lines if not ln.startswith("#"))
    para = " ".join(next((chunk for chunk in body.split("\n\n") if chunk.strip()), "").split())
    sentence = re.split(r"(?<=[.!?])\s", para, maxsplit=1)[0]
    sentence = re.sub(r"[`*]", "", sentence)
    return title, (sentence if len(sentence) <= 160 else sentence[:159] + "…")


def _count_figures(nb) -> int:
    """Outputs holding a figure: plotly's mimetype, or HTML with a plotly div (a widget's still)."""
    return sum(PLOTLY_MIME in o.get("data", {}) or "plotly-graph-div" in o.get("data", {}).get("text/html", "")
               for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Writer:
    """Writes files into ``out``, refusing to replace any file it did not write (see the module)."""

    def __init__(self, out: Path) -> None:
        if out.exists() and not out.is_dir():
            raise AlarmkitError(f"--html {out} is a file, not a folder; pick a folder for the bundle")
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.manifest_path = out / MANIFEST
        try:
            known = json.loads(self.manifest_path.read_text(encoding="utf-8"))["files"]
            self.known = {str(k): str(v) for k, v in known.items()} if isinstance(known, dict) else {}
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            self.known = {}
        if self.manifest_path.exists() and not self.known and self.manifest_path.read_bytes().strip():
            raise AlarmkitError(f"{self.manifest_path} is not a manifest this command wrote; "
                                "move it away or pick another folder")

    def check(self, names: Iterable[str]) -> None:
        """Refuse up front when any of ``names`` exists and is not ours, unchanged since we wrote it."""
        for name in names:
            path = self.out / name
            if not path.exists():
                continue
            if name not in self.known:
                raise AlarmkitError(f"{path} exists and was not written by `alarmkit notebooks`; "
                                    "move it away or pick another folder")
            if _sha(path) != self.known[name]:
                raise AlarmkitError(f"{path} changed since `alarmkit notebooks` wrote it; "
                                    "move it away (or delete it yourself) to rebuild")

    def write(self, name: str, text: str) -> Path:
        self.check([name])
        path = self.out / name
        data = text.encode("utf-8")
        write_bytes(path, data, ours=lambda p: _sha(p) == self.known.get(name), flag="--html", what="notebook page")
        self.known[name] = hashlib.sha256(data).hexdigest()
        write_text(self.manifest_path, json.dumps({"written_by": "alarmkit notebooks", "files": self.known},
                                                  indent=1, sort_keys=True),
                   ours=lambda p: True, flag="--html", what="manifest")  # read and checked in __init__
        return path


def _run(path: Path, env: dict, timeout: int, bar_position: int, progress: bool):
    import jupytext
    import nbclient
    from tqdm.auto import tqdm

    nb = jupytext.read(path)
    cells = sum(c.cell_type == "code" for c in nb.cells)
    with tempfile.TemporaryDirectory(prefix="alarmkit-nb-") as work, \
            tqdm(total=cells, desc=f"  {path.stem}", unit="cell", leave=False, position=bar_position,
                 disable=not progress) as bar:
        client = nbclient.NotebookClient(
            nb, kernel_name="python3", timeout=timeout, store_widget_state=False,
            resources={"metadata": {"path": work}}, on_cell_executed=lambda **_: bar.update(1))
        log_path = Path(work) / "kernel.log"  # the kernel's own chatter stays out of the progress bars
        try:
            with open(log_path, "wb") as log:
                client.execute(env={**env, "ALARMKIT_OUT": str(Path(work) / "out")}, stdout=log, stderr=log)
        except nbclient.exceptions.CellTimeoutError:
            raise AlarmkitError(f"{path.name}: a cell ran longer than {timeout} s; "
                                "pass --timeout SECONDS (or --ci for the small sweeps)") from None
        except nbclient.exceptions.CellExecutionError as err:
            raise AlarmkitError(f"{path.name}: a cell failed with {err.ename}: {err.evalue}; "
                                "open the notebook in JupyterLab to see the traceback") from None
        except nbclient.exceptions.DeadKernelError as err:
            said = log_path.read_text(encoding="utf-8", errors="replace").strip()[-2000:] or "nothing"
            raise AlarmkitError(f"{path.name}: the kernel died ({err}); it said: {said}") from None
    return nb


def build_bundle(out: str | Path, *, source: str | Path = "notebooks", only: Iterable[str] | None = None,
                 ci: bool = False, timeout: int = 600, progress: bool = True) -> Bundle:
    """Execute every notebook in ``source`` (or those in ``only``) and write the bundle into ``out``.

    ``ci=True`` runs the notebooks with ``ALARMKIT_CI=1`` (their small sweeps); ``timeout`` bounds
    each cell in seconds. Raises ``AlarmkitError`` for a missing extra, no notebooks, a failing
    cell, or a file in ``out`` this command did not write (checked before anything runs)."""
    try:
        import jupytext  # noqa: F401
        import nbclient  # noqa: F401
        from nbconvert import HTMLExporter
    except ImportError as err:
        raise AlarmkitError(f"the notebook bundle needs the notebooks extra ({err.name} is missing): "
                            "pip install 'alarmkit[notebooks]'") from None
    from tqdm.auto import tqdm

    if not isinstance(timeout, int) or timeout < 1:
        raise AlarmkitError(f"timeout is seconds per cell, at least 1, got {timeout!r}")
    paths = find_notebooks(source, only)
    writer = _Writer(Path(out))
    writer.check([p.stem + ".html" for p in paths] + ["index.html", GLOSSARY, PLOTLY_FILE])
    env = {**os.environ, **({"ALARMKIT_CI": "1"} if ci else {})}
    exporter = HTMLExporter(template_name="lab", **_OFFLINE_HTML)
    from plotly.offline import get_plotlyjs

    plotlyjs = get_plotlyjs()
    paragraphs: list[str] = []
    done: list[tuple[Page, str, str | None, float]] = []  # each page's body waits for its next page's title
    with tqdm(paths, desc="notebooks", unit="notebook", disable=not progress) as bar:
        for path in bar:
            bar.set_postfix_str(path.stem)
            t0 = time.perf_counter()
            nb = _run(path, env, timeout, 1, progress)
            title, summary = _title_and_summary(nb)
            body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title or path.stem}})
            page = Page(path, Path(out) / (path.stem + ".html"), title, summary, _count_figures(nb), 0, 0.0)
            done.append((page, body, scenario_of(nb), time.perf_counter() - t0))
            paragraphs.append(learning_paragraph(nb))
    writer.write(PLOTLY_FILE, plotlyjs)  # once, beside the pages, which load it (offline)
    writer.write(GLOSSARY, glossary_page())
    pages: list[Page] = []
    for i, (page, body, scenario, seconds) in enumerate(done):
        prev = done[i - 1][0] if i else None
        nxt = done[i + 1][0] if i + 1 < len(done) else None
        text = decorate(body, page=page, prev=prev, next_=nxt, plotlyjs=plotlyjs, scenario=scenario,
                        exercises=EXERCISES.get(page.source.name[:2], []))
        written = writer.write(page.html.name, text)
        pages.append(replace(page, html=written, bytes=written.stat().st_size, seconds=seconds))
    index = writer.write("index.html", index_page(pages, paragraphs, ci))
    return Bundle(Path(out), index, pages)


def add_arguments(p) -> None:
    """The ``alarmkit notebooks`` options (registered by ``alarmkit.cli``)."""
    p.add_argument("--html", required=True, metavar="DIR",
                   help="folder for the pages and index.html (created; files it did not write are never replaced)")
    p.add_argument("--from", dest="source", default="notebooks", metavar="DIR",
                   help="folder of NN_name.py notebooks; default: notebooks")
    p.add_argument("--only", default=None, metavar="N,N",
                   help="only these notebooks, by number or name, comma-separated (e.g. 02,07)")
    p.add_argument("--ci", action="store_true", help="run with ALARMKIT_CI=1: the small sweeps CI uses")
    p.add_argument("--timeout", type=int, default=600, metavar="SECONDS", help="limit per cell; default 600")
    p.add_argument("--json", action="store_true", help="print one JSON object, no progress bars")


def run_command(args) -> int:
    """``alarmkit notebooks --html DIR``: build the bundle and say where it is and how big."""
    bundle = build_bundle(args.html, source=args.source, only=args.only.split(",") if args.only else None,
                          ci=args.ci, timeout=args.timeout, progress=not args.json)
    if args.json:
        print(json.dumps({"index": str(bundle.index), "bytes": bundle.bytes,
                          "pages": [{"source": str(p.source), "html": str(p.html), "title": p.title,
                                     "figures": p.figures, "bytes": p.bytes, "seconds": round(p.seconds, 1)}
                                    for p in bundle.pages]}))
        return 0
    for p in bundle.pages:
        print(f"{p.html}  {p.bytes / 1e6:5.1f} MB  {p.figures:2d} figures  {p.seconds:5.1f} s  {p.title}")
    print(f"wrote {bundle.index} and {len(bundle.pages)} pages ({bundle.bytes / 1e6:.1f} MB in all)")
    return 0
