"""Export benchmark: a synthetic journal of N events, its HTML report, and Chromium's first render.

    python benchmarks/bench_export.py             # 10,000, 100,000 and 1,000,000 events
    python benchmarks/bench_export.py --quick     # 10,000 and 100,000
    python benchmarks/bench_export.py --sizes 1000000 --keep /tmp/bench   # keep the files

For each size: the journal is written through ``alarmkit.Journal`` (a DuckDB file), read back with
``Journal.events``, turned into the report's figures, written with ``export_html``; then headless
Chromium (network blocked) opens the file and we time navigation -> every figure rendered, and, for
a run big enough to open on its density map, three switches to detail, each on a freshly opened page:
a zoom onto 20 lanes x 1/50 of the time (drawn in SVG); onto every lane x the first 1/25 of the
opening view (mostly the time before the run's first event: ~57k events around the view); onto every
lane x 1/25 of the time mid-run (~145k). The last two hold more than 10,000 events around the view,
so WebGL. Each is timed until every event around the view is drawn. Such a page parses its detail
and starts WebGL in idle time after its first render: timed apart ("ready for detail"); each zoom
starts once that is done and a second has passed (a reader's pause; a page without that idle work,
e.g. one written before it, waits the same second). Printed: seconds per step, HTML size in MB and
bytes per event, and ratios against the smallest size. Headless Chromium here draws WebGL in software (SwiftShader, --disable-gpu), so
render times are an upper bound for a laptop with a GPU; they also swing with the machine's load.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from alarmkit import Journal
from alarmkit.viz.report import export_html

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def synthetic_rows(n_events: int, n_objects: int = 500, seed: int = 7) -> list[tuple]:
    """About ``n_events`` journal rows: objects arming, firing, failing, retrying on the workerd ladder,
    running effects (some twice), moving alarms, a few crashes, and a runtime restart every ~2% of the run."""
    rng = random.Random(seed)
    per_object = max(1, n_events // n_objects)
    rows: list[tuple] = []
    for o in range(n_objects):
        obj = f"obj-{o:04d}"
        t, k, start = rng.randint(0, 5_000), 0, len(rows)
        ev = rows.append
        ev((t, "LEASES", obj, "construct", None, None, None, None))
        while len(rows) - start < per_object:
            k += 1
            due = t + rng.randint(100, 60_000)
            ev((t, "LEASES", obj, "arm", due, None, None, {"direction": "new", "cause": "user"}))
            if rng.random() < 0.15:  # the user moves it
                moved = max(t + 1, due + rng.randint(-20_000, 20_000))
                ev((t + 1, "LEASES", obj, "arm", moved, due, None,
                    {"direction": "earlier" if moved < due else "later", "cause": "user"}))
                due = moved
            retry, at = 0, due
            while True:
                fire = at + rng.randint(1, 5)
                ev((fire, "LEASES", obj, "fire", due, None, retry, {"attempt": k, "late_ms": fire - due}))
                took = rng.choice((0, 0, 0, 0, 0, 0, 0, 0, 5, rng.randint(50, 3_000)))
                fails = rng.random() < 0.08 and retry < 6
                ev((fire + took, "LEASES", obj, "effect", None, None, None, {"name": "revoke", "key": f"{obj}-{k}"}))
                if not fails:
                    ev((fire + took, "LEASES", obj, "handler_ok", due, None, retry, {"next_ms": None}))
                    break
                ev((fire + took, "LEASES", obj, "handler_error", due, None, retry,
                    {"error": "InjectedError", "message": "synthetic failure", "counted": True}))
                base = 2_000 << retry
                jitter = rng.randint(0, base // 4)
                at = fire + took + base + jitter
                retry += 1
                ev((fire + took, "LEASES", obj, "arm", at, due, retry, {"direction": "later", "cause": "retry"}))
                ev((fire + took, "LEASES", obj, "retry_scheduled", at, due, retry,
                    {"rung": retry - 1, "base_ms": base, "jitter_ms": jitter, "delay_ms": base + jitter, "counted": True}))
            if rng.random() < 0.004:
                ev((fire + took + 1, "LEASES", obj, "crash", None, None, None, {"reason": "synthetic crash"}))
            t = fire + took + rng.randint(1_000, 120_000)
    span = max(r[0] for r in rows)
    for i in range(1, 50):
        rows.append((span * i // 50, None, None, "restart", None, None, None, {"downtime_ms": 5_000}))
    rows.sort(key=lambda r: r[0])  # stable: each object's own order is kept
    return [(seq, *r) for seq, r in enumerate(rows[:n_events], start=1)]


def write_journal(path: Path, n_events: int) -> tuple[int, int, float]:
    t0 = time.perf_counter()
    rows = synthetic_rows(n_events)
    with Journal(path) as j:
        run_id = j.start_run("synthetic", "workerd", 7, {"events": n_events}, None)
        for i in range(0, len(rows), j.batch_size):
            j.write_events(run_id, rows[i:i + j.batch_size])
        j.end_run(run_id, True)  # a finished run: the report would otherwise say it was cut short
    return run_id, len(rows), time.perf_counter() - t0


POINTS = """() => {
    const gd = document.getElementById('figure-0');
    const pts = gd._fullData.filter(t => t.meta && t.meta.role === 'events').reduce((n, t) => n + t.x.length, 0);
    return {points: pts, canvas: document.querySelectorAll('#figure-0 canvas').length,
            inPage: performance.now(), heapMB: (performance.memory || {}).usedJSHeapSize / 1e6};
}"""


def plotly_only(folder: Path) -> float:
    """The peer: a report of one tiny figure, so mostly plotly.js loading (~1 s of any report's first
    render here). A render time divided by this one swings less with the machine's load."""
    import plotly.graph_objects as go

    out = export_html(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), folder / "plotly-only.html")
    return first_render(out, 1, count=False)["wall_s"]


ZOOMS = {  # Plotly.relayout arguments, from the opening x range xr
    "lanes": "{'xaxis.range': [xr[0], xr[0] + (xr[1] - xr[0]) / 50], 'yaxis.range': [20.5, -0.5]}",
    "all": "{'xaxis.range': [xr[0], xr[0] + (xr[1] - xr[0]) / 25]}",
    "middle": "{'xaxis.range': [xr[0] + (xr[1] - xr[0]) * 0.48, xr[0] + (xr[1] - xr[0]) * 0.52]}",
}
ZOOM_LABEL = {"lanes": "20 of 500 lanes x 1/50 of the time", "all": "every lane x the first 1/25 of the view",
              "middle": "every lane x 1/25 of the time mid-run"}
# a page whose script does idle work after its first render (parsing its detail, starting WebGL)
HAS_WARM_UP = "() => [...document.scripts].some(s => s.type !== 'application/json' && s.text.includes('alarmkitWarm'))"


def first_render(html: Path, n_figures: int, count: bool = True, zoom: str = "lanes") -> dict:
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (blocked.append(route.request.url), route.abort()))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        t0 = time.perf_counter()
        page.goto(html.as_uri(), wait_until="commit", timeout=300_000)
        page.wait_for_function(f"Number(document.body && document.body.dataset.rendered) >= {n_figures}",
                               timeout=600_000, polling=50)
        wall = time.perf_counter() - t0
        info = page.evaluate(POINTS) if count else {}
        zoom_s = ready = None
        if count and page.evaluate("() => (document.getElementById('figure-0').layout.meta || {}).detail_in_view || 0"):
            if page.evaluate(HAS_WARM_UP):  # its idle work done: parsed detail, WebGL started
                page.wait_for_function("document.getElementById('figure-0').alarmkitWarm === true",
                                       timeout=600_000, polling=20)
                ready = time.perf_counter() - t0
            time.sleep(1.0)  # a reader's pause before zooming, the same for a page without idle work
            # the page swaps the density map for every event in and around the view
            t0 = time.perf_counter()
            page.evaluate("""async () => {
                const gd = document.getElementById('figure-0'), xr = gd._fullLayout.xaxis.range;
                await Plotly.relayout(gd, %s);
                await new Promise(r => requestAnimationFrame(() => r()));
            }""" % ZOOMS[zoom])
            page.wait_for_function("document.getElementById('figure-0').alarmkitDetail === true", timeout=600_000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))")
            zoom_s = time.perf_counter() - t0
            after = page.evaluate(POINTS)
            info = {**info, "points_in_detail": after["points"], "canvas_in_detail": after["canvas"]}
        browser.close()
    return {"wall_s": wall, "zoom_s": zoom_s, "ready_s": ready, **info, "errors": errors, "blocked": blocked}


def files(folder: Path, n: int) -> tuple[Path, Path]:
    """The journal and the report ``bench`` writes for ``n`` events in ``folder``."""
    return folder / f"j{n}.duckdb", folder / f"report{n}.html"


def bench(n: int, folder: Path) -> dict:
    db, out = files(folder, n)
    run_id, rows, t_write = write_journal(db, n)
    with Journal(db) as j:
        t0 = time.perf_counter()
        events = j.events(run_id)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        export_html(run_id, out, journal=j)
        t_export = time.perf_counter() - t0
    n_figs = 1 + events["kind"].eq("retry_scheduled").any() + events["kind"].eq("fire").any()
    render = first_render(out, int(n_figs))
    render["peer_s"] = plotly_only(folder)
    if render["zoom_s"] is not None:  # the switches onto every lane, each on a fresh page
        for zoom in ("all", "middle"):
            render[zoom] = first_render(out, int(n_figs), zoom=zoom)
            assert not render[zoom]["blocked"] and not render[zoom]["errors"], render[zoom]
    # a run opening on its density map draws, once zoomed to detail, the events in and around the view
    assert render["points"] == rows or render["zoom_s"] is not None, f"page shows {render['points']} points, journal has {rows}"
    assert not render["blocked"] and not render["errors"], render
    return {"events": rows, "write_s": t_write, "read_s": t_read, "export_s": t_export,
            "mb": out.stat().st_size / 1e6, "render": render}


def pair(before: Path, after: Path, repeat: int, zooms: tuple[str, ...] = tuple(ZOOMS)) -> int:
    """Two reports of one journal (e.g. one written before a change, kept with --keep), rendered in
    turns: first render and the zoom to detail, each run's ratio after/before and the best of each."""
    figs = 3  # the timeline, the retry ladder, lateness: what bench() writes for a synthetic journal
    for zoom in zooms:
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for _ in range(repeat):
            for name, path in (("before", before), ("after", after)):
                runs[name].append(first_render(path, figs, zoom=zoom))
                r = runs[name][-1]
                ready = f", ready for detail {r['ready_s']:.2f} s" if r["ready_s"] is not None else ""
                print(f"{name}: first render {r['wall_s']:.2f} s (WebGL canvases {r['canvas']}){ready}, "
                      f"detail ({ZOOM_LABEL[zoom]}) {r['zoom_s'] or 0:.2f} s, points at load "
                      f"{r['points']:,}, in detail {r.get('points_in_detail', 0):,}", flush=True)
        for key, label in (("wall_s", "first render"), ("zoom_s", f"switch to detail ({ZOOM_LABEL[zoom]})")):
            if any(r[key] is None for rs in runs.values() for r in rs):
                print(f"{label}: not measured (a report that does not open on its density map has no switch)")
                continue
            ratios = sorted(a[key] / b[key] for a, b in zip(runs["after"], runs["before"]))
            span = {name: sorted(r[key] for r in rs) for name, rs in runs.items()}
            print(f"{label}: before {span['before'][0]:.2f}-{span['before'][-1]:.2f} s, after "
                  f"{span['after'][0]:.2f}-{span['after'][-1]:.2f} s (best first); paired after/before "
                  f"{ratios[0]:.2f}x..{ratios[-1]:.2f}x", flush=True)
    return 0


def _count(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected a number in {lo:,}..{hi:,}, got {value:,}")
        return value
    return parse


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 and 100,000 events only")
    ap.add_argument("--sizes", type=_count(1_000, 10_000_000), nargs="*",
                    help="journal sizes in events, each in 1,000..10,000,000 (default 10,000, 100,000 and 1,000,000)")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the journals and reports in")
    ap.add_argument("--pair", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                    help="render two reports of the same journal in turns (--repeat times) and print their ratios")
    ap.add_argument("--repeat", type=_count(1, 100), default=3, help="with --pair: turns of each report (default 3)")
    ap.add_argument("--zoom", choices=[*ZOOMS, "each"], default=None, help="with --pair: which switch to detail (default each)")
    a = ap.parse_args(argv)
    sizes = a.sizes or ([10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000])
    if a.zoom is not None and not a.pair:
        ap.error("--zoom goes with --pair (a plain run times every switch)")
    if a.pair:
        for path in a.pair:
            if not path.is_file():
                ap.error(f"--pair: {path} is not a file (two HTML reports of one journal)")
        a.pair = [path.resolve() for path in a.pair]  # a file URI needs an absolute path
    if a.keep is not None:
        if a.keep.exists() and not a.keep.is_dir():
            ap.error(f"--keep {a.keep} is a file; it takes a folder to keep the journals and reports in")
        taken = [p.name for n in sizes for p in files(a.keep, n) if p.exists()]
        if taken:  # never written over: they may be someone's
            ap.error(f"--keep {a.keep} holds {', '.join(taken)} already; pass an empty folder")
    if not Path(CHROMIUM).exists():
        print(f"no {CHROMIUM}; install Debian's chromium package", file=sys.stderr)
        return 2
    if a.pair:
        return pair(*a.pair, repeat=a.repeat, zooms=tuple(ZOOMS) if a.zoom in (None, "each") else (a.zoom,))
    folder = a.keep or Path(tempfile.mkdtemp(prefix="alarmkit-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for n in sizes:
            r = bench(n, folder)
            results.append(r)
            rr = r["render"]
            print(f"{r['events']:>9,} events: journal write {r['write_s']:.1f} s, read {r['read_s']:.2f} s, "
                  f"export {r['export_s']:.1f} s, HTML {r['mb']:.1f} MB ({r['mb'] * 1e6 / r['events']:.1f} B/event), "
                  f"first render {rr['wall_s']:.2f} s in Chromium (WebGL canvases {rr['canvas']}, "
                  f"points {rr['points']:,}, JS heap {rr['heapMB']:.0f} MB); "
                  f"a plotly.js-only page {rr['peer_s']:.2f} s in the same run: x{rr['wall_s'] / rr['peer_s']:.2f}"
                  + (f"; ready for detail (idle work after the first render) {rr['ready_s']:.2f} s"
                     if rr.get("ready_s") is not None else ""),
                  flush=True)
            for zoom, z in (("lanes", rr), ("all", rr.get("all")), ("middle", rr.get("middle"))):
                if z and z["zoom_s"] is not None:
                    print(f"   switch to detail, {ZOOM_LABEL[zoom]}: {z['zoom_s']:.2f} s ({z['points_in_detail']:,} "
                          f"events drawn in and around the view, WebGL canvases {z['canvas_in_detail']})"
                          + (f"; target < 1.5 s: {z['zoom_s'] / 1.5:.2f}x of it" if r["events"] >= 1_000_000 else ""),
                          flush=True)
            if r["events"] >= 1_000_000:
                print(f"   target: first render <= 3 s ({rr['wall_s'] / 3:.2f}x of it)", flush=True)
    finally:
        if a.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    base = results[0]
    for r in results[1:]:
        k = r["events"] / base["events"]
        print(f"x{k:g} events -> export x{r['export_s'] / base['export_s']:.1f}, size x{r['mb'] / base['mb']:.1f}, "
              f"first render x{r['render']['wall_s'] / base['render']['wall_s']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
