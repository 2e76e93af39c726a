"""What a report says matches what it draws: one classification of kinds (alarmkit._kinds) behind the
summary and the marks, comparison runs side by side, the keepalive's rungs, hostile and huge text."""

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import alarmkit as ak
from alarmkit import AlarmkitError
from alarmkit.journal._kinds import CLASS_OF, class_counts, kind_class
from alarmkit.viz.plots import keepalive_ladder, lateness, timeline
from alarmkit.viz.report import PLOTLY_FILE, difference_line, export_folder, export_html, peer_runs, run_figures, summary_rows
from alarmkit.runtime.profiles import PROFILES

# these tests are about the report, not fire lateness: simulations here take the exact fire latency
# (each fire 2 ms late), not the workerd profile's measured default (tests/runtime/test_latency_measured.py)
EXACT = PROFILES["workerd"].replace(fire_latency="exact")


@pytest.fixture(scope="module")
def demo():
    """Every built-in scenario, seed 1, in one journal (as ``alarmkit demo`` runs them)."""
    j = ak.Journal()
    runs = {sc.name: ak.run_scenario(sc.name, seed=1, journal=j, profile=EXACT if sc.profile == "workerd" else None).run_id
            for sc in ak.list_scenarios()}
    yield j, runs
    j.close()


def rows_of(events, run=None):
    return {k: v for k, v, _ in summary_rows(events, run)}


def drawn(fig, yaxis="y"):
    """Marks per class in one row of a timeline, from the traces' own points."""
    out = {}
    for t in fig.data:
        if isinstance(t.meta, dict) and t.meta.get("role") == "events" and (t.yaxis or "y") == yaxis:
            out[t.meta["class"]] = out.get(t.meta["class"], 0) + len(t.x)
    return out


def test_every_kind_has_one_class_and_revive_and_revival_are_one():
    assert kind_class("revive") == kind_class("revival") == "revived"
    assert set(ak.journal.EVENT_KINDS) - set(CLASS_OF) == {  # the kinds that count under their own name
        "keepalive_arm", "keepalive_disarm", "keepalive_fire", "proxy_deliver", "wake", "deploy"}
    assert class_counts(["revive", "revival", "revival", "fire"]) == {"revived": 3, "fired": 1}


def test_each_summary_count_equals_the_marks_drawn_in_every_demo_report(demo):
    j, runs = demo
    for name, run_id in runs.items():
        run = j.run(run_id)
        ev = j.events(run_id)
        said = rows_of(ev, run)["on the timeline"]
        counts = {c: int(n.replace(",", "")) for c, n in re.findall(r"([a-z_ ]+?) (\d[\d,]*)(?:, |$)", said)}
        fig = run_figures(ev, run, peer_runs(j, run))[0]
        assert counts == drawn(fig), (name, said)
        assert sum(counts.values()) == len(ev), name


def test_the_crash_loop_summary_counts_the_four_revival_stars(demo):
    j, runs = demo
    ev = j.events(runs["guestbook-crash-loop"])
    assert (ev.kind == "revival").sum() == 4 and (ev.kind == "revive").sum() == 0
    attempts = rows_of(ev)["attempts"]
    assert attempts.endswith(", 4 revived"), attempts
    assert drawn(timeline(ev))["revived"] == 4


def test_the_comparison_report_draws_both_runs_on_one_axis_and_names_the_difference(demo, tmp_path):
    j, runs = demo
    run = j.run(runs["keepalive-celld-vs-workerd"])
    peers = peer_runs(j, run)
    assert list(peers) == ["workerd"] and set(peers["workerd"]["run_id"]) == {run["run_id"] + 1}
    line = difference_line({"celld": j.events(run["run_id"]), **peers})
    assert line == "celld fired 45.0, 32.0, 19.0, 6.0 s late; workerd 2 ms at most"
    page = export_html(run["run_id"], tmp_path / "k.html", journal=j).read_text()
    assert f"<th>compared with</th><td>{line}</td>" in page
    fig = run_figures(j.events(run["run_id"]), run, peers)[0]
    assert [a.text for a in fig.layout.annotations] == ["celld", "workerd"]  # one row each
    assert fig.layout.xaxis2.matches == "x"  # one time axis
    assert drawn(fig, "y2") and drawn(fig, "y")


def test_keepalive_rungs_are_labelled_and_the_ladder_shows_self_gated_fires(demo):
    j, runs = demo
    ev = j.events(runs["guestbook-crash-loop"])
    (rungs,) = [t for t in timeline(ev).data if (t.meta or {}).get("kind") == "keepalive rung"]
    assert list(rungs.text) == ["+10 s", "+20 s", "+40 s", "+80 s", "+10 s", "+20 s"]  # none dropped
    arms = ev[ev.kind == "keepalive_arm"]
    assert list(rungs.x) == [(t + s) / 2 / 1000 for t, s in zip(arms.t_ms, arms.scheduled_ms)]  # mid-wait
    fig = keepalive_ladder(ev)
    assert list(fig.layout.xaxis.ticktext) == ["0: +10 s", "1: +20 s", "2: +40 s", "3: +80 s"]
    gated = next(t for t in fig.data if (t.meta or {}).get("outcome") == "gated itself")
    assert list(gated.text) == ["budget spent"] and list(gated.x) == [3.0]
    assert gated.y[0] == pytest.approx(80.002)  # armed at 71.006 s, fired at 151.008 s
    revived = next(t for t in fig.data if (t.meta or {}).get("outcome") == "revived")
    assert list(revived.x) == [0.0, 1.0, 2.0, 0.0]
    with pytest.raises(AlarmkitError, match=r"^no keepalive_arm events in this run"):
        keepalive_ladder(j.events(runs["lease-normal"]))


def test_lateness_of_equal_values_sits_mid_axis(demo):
    j, runs = demo
    fig = lateness(j.events(runs["lease-normal"]))  # every fire 2 ms late
    assert set(np.concatenate([t.x for t in fig.data])) == {2.0}
    assert list(fig.layout.xaxis.range) == [0.0, 4.0]


def test_a_folder_of_reports_shares_one_plotly_js(demo, tmp_path):
    j, runs = demo
    names = {"a.html": runs["lease-normal"], "b.html": runs["lease-exhaustion"]}
    pages = export_folder(j, names, tmp_path)
    assert [p.name for p in pages] == ["a.html", "b.html"]
    js = (tmp_path / PLOTLY_FILE).read_text()
    assert len(js) > 3_000_000 and "plotly.js v" in js[:500]
    for p in pages:
        text = p.read_text()
        assert len(text) < 300_000 and "plotly.js v" not in text
        assert text.count(f'<script src="{PLOTLY_FILE}"></script>') == 1 and "src=\"http" not in text
        assert "default-src 'none'" in text and "connect-src 'none'" in text
    single = export_html(runs["lease-normal"], tmp_path / "single.html", journal=j).read_text()
    assert "plotly.js v" in single and "<script src" not in single  # one exported file stays whole
    with pytest.raises(AlarmkitError, match=r"^report names are file names ending in \.html, got \['\.\./x\.html'\]"):
        export_folder(j, {"../x.html": 1}, tmp_path)
    with pytest.raises(AlarmkitError, match=r"^folder .*nope does not exist"):
        export_folder(j, names, tmp_path / "nope")


# -- hostile and huge text -------------------------------------------------------------------------

def frame(object_id, n=3):
    rows = [(i + 1, 100 * i, "NS", object_id, k, None, None, None, None)
            for i, k in enumerate(["construct", "call", "evict"][:n])]
    return ak.journal.rows_to_frame(1, rows)


def test_a_2000_character_object_id_is_cut_on_the_plot_and_whole_in_the_summary():
    oid = "o" * 1_999 + "Z"
    fig = timeline(frame(oid))
    (tick,) = fig.layout.yaxis.ticktext
    assert len(tick) == 48 and tick.endswith("…")
    hovers = [h for t in fig.data if t.hovertext is not None for h in t.hovertext]
    assert hovers and all(len(h) < 400 for h in hovers) and all("…" in h for h in hovers)
    assert rows_of(frame(oid))["objects"] == f"1: {oid}"


def test_a_megabyte_object_id_makes_a_page_of_normal_size(tmp_path):
    oid = "x" * 1_000_000
    out = export_html(frame(oid), tmp_path / "big.html", run={"scenario": "big"})
    size = out.stat().st_size
    assert size < 4_800_000 + 1_000_000 + 200_000, size  # plotly.js + the id once, in the summary table


def test_bidi_controls_are_shown_as_visible_escapes(tmp_path):
    oid = "user\u202egnp.exe"
    fig = timeline(frame(oid))
    assert list(fig.layout.yaxis.ticktext) == ["user\\u202egnp.exe"]
    page = export_html(frame(oid), tmp_path / "b.html", run={"scenario": "s\u2066x"}).read_text()
    assert "\u202e" not in page and "\u2066" not in page
    assert "<td>1: user\\u202egnp.exe</td>" in page and "<h1>s\\u2066x · run ?</h1>" in page


def test_esc_makes_controls_visible_cuts_with_an_ellipsis_and_escapes_markup():
    from alarmkit.viz.plots import esc

    assert esc("a\ud800b") == "a\\ud800b"  # a lone surrogate (kept out of journals) cannot break a page
    assert esc("<b>\u202e</b>", 6) == "&lt;b&gt;\\u202e&lt;…"  # cut to 6 characters, then escaped
    assert esc("tab\tand\nnewline\x07") == "tab\tand\nnewline\\u0007"


def test_a_huge_kind_name_is_cut_in_the_legend():
    ev = frame("o", 1).assign(kind="k" * 5_000)
    (t,) = [t for t in timeline(ev).data if t.showlegend]
    assert len(t.name) == 48 and t.name.endswith("…")
    assert isinstance(timeline(ev), go.Figure) and isinstance(ev, pd.DataFrame)


def test_a_report_of_a_run_made_without_a_journal_says_so_instead_of_none(tmp_path):
    r = ak.run_scenario("lease-exhaustion", seed=1)  # README's example: no journal, so no run id
    assert r.run_id is None
    page = export_html(r, tmp_path / "lease.html").read_text(encoding="utf-8")
    assert "<title>lease-exhaustion · run not journaled</title>" in page
    assert "<tr><th>run</th><td>not journaled</td></tr>" in page
    figs = run_figures(r.events, {"scenario": "lease-exhaustion", "run_id": None})
    assert figs[0].layout.title.text.startswith("lease-exhaustion · run not journaled")
    assert [t.name for t in figs[-1].data if t.type == "box"] == ["run not journaled"]  # the lateness figure
    assert "run None" not in page and "run -1" not in page and ">None<" not in page


def test_the_summary_writes_every_count_with_thousands_separators():
    from alarmkit.journal import rows_to_frame

    rows = [(i, i * 10, "NS", f"o{i % 3}", k, i * 10, None, 0, {"name": "e", "key": i} if k == "effect" else {})
            for i, k in enumerate(["fire", "handler_ok", "effect"] * 1_200, start=1)]
    said = rows_of(rows_to_frame(1, rows))
    assert said["attempts"] == "1,200 alarm() runs: 1,200 first, 0 retries; 1,200 ok, 0 failed, 0 abandoned, 0 revived"
    assert said["effects"] == "1,200 run, 1,200 distinct"
