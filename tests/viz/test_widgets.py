"""The explorer widget, built and driven through its traits without a browser."""

import pytest

pytest.importorskip("ipywidgets")

from alarmkit import AlarmkitError  # noqa: E402
from alarmkit.viz.widgets import Explorer  # noqa: E402


def points(fig):
    """Drawn event marks (the "now" cursor and its label, the cut and fold markers are not events)."""
    return sum(len(t.x) for t in fig.data if t.x is not None
               and (t.meta or {}).get("role") not in ("cursor", "now", "cut", "fold"))


def test_explorer_runs_the_scenario_and_draws_it():
    e = Explorer("lease-lab", leases=3)
    assert [a["t_ms"] for a in e.result.attempts] == [302, 1502, 2702]
    assert len(e.figure.data) > 0
    assert e.time.max == int(e.events["t_ms"].max())
    assert "3 alarm() attempts" in e.status.value


def test_changing_a_control_reruns_and_changes_the_timeline():
    e = Explorer("lease-lab", leases=2)
    before = points(e.figure)
    e.controls["revoke_throws"].value = 1
    assert e.result.effects == {"lease-0": 2, "lease-1": 1}
    assert points(e.figure) > before
    assert e.result.run_id == 2  # both runs went to the explorer's journal


def test_moving_the_time_slider_shows_the_run_as_it_stood():
    e = Explorer("lease-lab", leases=2)
    full = points(e.figure)
    e.time.value = 400  # after the first fire (302), before the second (1502)
    shown = e.events[e.events.t_ms <= 400]
    assert "fire" in shown.kind.tolist() and shown.kind.tolist().count("fire") == 1
    assert 0 < points(e.figure) < full
    assert "1502" not in e.table.value


def test_bad_input_keeps_the_previous_run_and_says_why():
    e = Explorer("lease-lab")
    run = e.result.run_id
    e.controls["leases"].value = -1
    assert e.result.run_id == run
    assert "leases=-1" in e.status.value


def test_profile_and_latency_controls_apply():
    e = Explorer("lease-lab", leases=1)
    e.latency.value = 250
    assert [a["t_ms"] for a in e.result.attempts] == [550]


def test_export_button_writes_a_self_contained_report(tmp_path):
    e = Explorer("lease-lab")
    e.out_path.value = str(tmp_path / "r.html")
    e.export_button.click()
    text = (tmp_path / "r.html").read_text()
    assert len(text) > 3_000_000  # plotly.js is embedded, not fetched
    assert 'src="http' not in text
    assert "wrote" in e.status.value


def test_unknown_parameter_names_the_ones_there_are():
    with pytest.raises(AlarmkitError, match=r"has no parameter\(s\) \['ttl'\]"):
        Explorer("lease-lab", ttl=5)


def test_a_fault_plan_applies_to_every_run():
    from alarmkit import FaultPlan

    plan = FaultPlan.from_dict({"handler_throws": [1]})
    e = Explorer("lease-lab", leases=1, faults=plan)
    assert [a["retry_count"] for a in e.result.attempts] == [0, 1]
    e.controls["ttl_ms"].value = 500
    assert [a["retry_count"] for a in e.result.attempts] == [0, 1]
    assert e.result.attempts[0]["t_ms"] == 502


def shapes_at(e):
    return sorted((s.type, s.x0) for s in e.figure.layout.shapes)


def test_moving_back_leaves_no_shape_or_annotation_of_the_later_frame():
    e = Explorer("guestbook-crash-loop")
    sent = []
    real = e.figure.plotly_relayout
    e.figure.plotly_relayout = lambda d, **k: (sent.append(d), real(d, **k))
    restart = int(e.events.loc[e.events.kind == "restart", "t_ms"].iloc[0])  # 300,000 ms
    assert shapes_at(e) == [("line", restart / 1000), ("rect", restart / 1000)]
    e.time.value = 200_000  # before the restart: no restart line, and the front end is told so outright
    assert shapes_at(e) == [] and sent[-1] == {"shapes": [], "annotations": []}
    e.time.value = 400
    assert [a.text for a in e.figure.layout.annotations] == ["nothing has happened by 0.400 s"]
    assert sent[-1]["annotations"][0]["text"] == "nothing has happened by 0.400 s" and sent[-1]["shapes"] == []
    assert points(e.figure) == 0 and e.table.value == ""


def test_the_explorer_legend_is_grouped_by_class_and_the_title_holds_the_note():
    e = Explorer("guestbook-crash-loop")
    named = [t.name for t in e.figure.data if t.showlegend]
    assert "revived" in named and "revive" not in named and "revival" not in named
    assert len(named) <= 12 and len(named) == len(set(named))
    assert "<br>" in e.figure.layout.title.text and not e.figure.layout.title.subtitle.text


def test_an_exported_notebook_sees_a_still_of_the_current_figure():
    e = Explorer("lease-lab", leases=1)
    e.time.value = 400  # the still is the figure as it stands now, not as it was built
    bundle = e._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # JupyterLab keeps the live widget
    still = bundle["text/html"]
    assert "Plotly.newPlot" in still and "<script src" not in still and 'src="http' not in still
    assert "fired" in still and "nothing has happened" not in still  # the first fire (302 ms) is in
    g = Explorer("guestbook-crash-loop")
    g.time.value = 400  # its first event is at 1,000 ms
    assert "nothing has happened by 0.400 s" in g._repr_mimebundle_()["text/html"]


def test_the_figure_is_sized_to_its_box_by_a_companion_widget():
    from alarmkit.viz._fit import Fit

    e = Explorer("lease-lab", leases=1)
    fits = [c for c in e.children if isinstance(c, Fit)]
    assert len(fits) == 1 and "ResizeObserver" in fits[0]._esm and "plotlywidget-after-render" in fits[0]._esm
    assert e.figure._config["responsive"] is True  # the window resize Fit sends reaches plotly's handler
    assert e.figure.layout.width is None and e.figure.layout.autosize
