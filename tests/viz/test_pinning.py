"""The explorer's "Pin this run": pin, change a setting, read the diff against the pinned run, unpin.
Driven through the widgets' traits and buttons, without a browser."""

import pandas as pd
import pytest

pytest.importorskip("ipywidgets")

import alarmkit as ak  # noqa: E402
from alarmkit.viz.pinning import Pin  # noqa: E402
from alarmkit.viz.widgets import Explorer  # noqa: E402


def strong_marks(fig) -> int:
    return sum(len(t.x) for t in fig.data if (t.meta or {}).get("role") == "strong")


def test_pin_then_change_a_setting_names_the_first_divergence_and_its_virtual_time():
    e = Explorer("lease-lab", leases=3)
    p = e.pinning
    assert e.pinned is None and e.pinned_diff is None and p.unpin_button.disabled and p.figure_toggle.disabled
    assert p.state.lines() == ["No run pinned: pin this run to diff every later run against it."]
    p.pin_button.click()
    assert e.pinned is e.result and e.pinned.run_id == 1 and not p.unpin_button.disabled
    assert p.state.lines() == ["Run 1 is pinned: every later run is diffed against it."]
    assert e.pinned_diff is None and p.figure_toggle.disabled  # nothing to diff yet
    e.controls["leases"].value = 2  # the third lease is never granted
    d = e.pinned_diff
    assert e.result.run_id == 2 and d.names == ("pinned run 1", "run 2")
    fd = d.first_divergence
    assert (fd.object, fd.kind, fd.t_ms, fd.run, fd.status) == ("ledger", "arm", 1_502, "a", "only_a")
    assert p.state.lines() == [
        "Run 2 against pinned run 1: 4 differing alarm events (4 only in the pinned run); 8 matched.",
        "First divergence: pinned run 1 arms ledger for 2.7 s at 1.502 s (cause: user); run 2 does not.",
        "On ledger, run 2 has 1 fewer fire, 1 fewer effect than pinned run 1.",
        "Note: the runs were made differently: parameters leases differ.",
    ]
    assert p.summary.value.startswith("<b>Run 2 against pinned run 1: 4 differing alarm events")
    assert "<li>First divergence: pinned run 1 arms ledger for 2.7 s at 1.502 s" in p.summary.value
    # the widget's diff is ak.diff(pinned, current), nothing of its own
    again = ak.diff(e.pinned, e.result, names=("pinned run 1", "run 2"))
    pd.testing.assert_frame_equal(d.table(), again.table())
    assert list(d.table()["t_a"]) == [1_502, 2_702, 2_702, 2_702]


def test_back_to_the_pinned_settings_is_the_same_as_the_pinned_run():
    e = Explorer("lease-lab", leases=3, pin=True)
    assert e.pinned.run_id == 1
    e.controls["leases"].value = 2
    e.controls["leases"].value = 3
    assert e.result.run_id == 3 and e.pinned_diff.same and e.pinned_diff.first_divergence is None
    assert e.pinning.state.lines() == ["Same as the pinned run: run 3 and pinned run 1 agree (12 alarm events matched)."]


def test_a_moved_alarm_is_counted_though_nothing_is_missing():
    e = Explorer("lease-lab", leases=3, pin=True)
    e.controls["ttl_ms"].value = 500  # every lease expires 200 ms later
    assert e.pinned_diff.first_divergence is None
    lines = e.pinning.state.lines()
    # the arms and fires are for other times, and every event after them happens 200 ms later (times compared)
    assert lines[:4] == [
        "Run 2 against pinned run 1: 12 differing alarm events (12 moved); 0 matched.",
        "No event is missing from either run and none ends otherwise.",
        "ledger's arm for 300 ms in pinned run 1 is for 500 ms in run 2 (200 ms later; at 0 ms and 0 ms).",
        "ledger's fire for 300 ms in pinned run 1 is for 500 ms in run 2 (200 ms later; at 302 ms and 502 ms).",
    ]
    assert lines[-2:] == ["… and 6 more moved events.",
                          "Note: the runs were made differently: parameters ttl_ms differ."]


def test_a_thrown_revoke_shows_the_retry_and_its_duplicate_effect():
    e = Explorer("lease-lab", leases=3, pin=True)
    e.controls["revoke_throws"].value = 1
    d = e.pinned_diff
    assert (d.first_divergence.kind, d.first_divergence.t_ms) == ("arm", 302)
    assert dict(d.table()["status"].value_counts()) == {"only_a": 6, "only_b": 3, "changed": 1, "moved": 2}
    assert e.pinning.state.lines()[0] == ("Run 2 against pinned run 1: 12 differing alarm events (6 only in the "
                                          "pinned run, 3 only in run 2, 1 with another outcome, 2 moved); 3 matched.")
    # the two revokes the retry runs at 2.736 s are the same effects, later
    assert [(int(r.t_a), int(r.t_b)) for r in d.table().itertuples() if r.status == "moved"] == [(1502, 2736),
                                                                                               (2702, 2736)]
    assert "On ledger, run 2 has 1 fewer fire, 1 more retry, 1 more effect, 1 more duplicate effect than " \
           "pinned run 1." in e.pinning.state.lines()


def test_a_restart_is_named_as_a_run_wide_event_and_the_late_fire_with_both_latenesses():
    e = Explorer("lease-lab", leases=3, noboot=True, pin=True)
    e.controls["restart_at_ms"].value = 1_000  # 5 s of downtime: the alarm due at 1.5 s fires at 6.002 s
    assert e.pin_summary().split("\n") == [
        "Run 2 against pinned run 1: 9 differing alarm events (3 only in the pinned run, 2 only in run 2, "
        "3 moved, 1 with another lateness); 5 matched.",
        "First divergence: run 2 has a restart at 1 s; pinned run 1 does not.",
        "ledger's alarm due 1.5 s fires 2 ms late in pinned run 1 and 4.502 s late in run 2.",
        "ledger's effect at 1.502 s in pinned run 1 happens 4.5 s later in run 2 (at 6.002 s).",
        "ledger's handler_ok at 1.502 s in pinned run 1 happens 4.5 s later in run 2 (at 6.002 s).",
        "ledger's effect at 2.702 s in pinned run 1 happens 3.3 s later in run 2 (at 6.002 s).",
        "On ledger, run 2 has 1 fewer fire than pinned run 1.",
        "Note: the runs were made differently: parameters restart_at_ms differ.",
    ]


def test_the_diff_figure_is_drawn_only_while_its_toggle_is_on_and_follows_the_runs():
    e = Explorer("lease-lab", leases=3, pin=True)
    p = e.pinning
    e.controls["leases"].value = 2
    assert not p.figure_toggle.disabled and p.figure is None and p.figure_box.children == ()
    p.figure_toggle.value = True
    assert p.figure_box.children == (p.figure,)
    assert strong_marks(p.figure) == len(e.pinned_diff.table()) == 4
    assert p.figure.layout.meta["strong_rows"] == 4 and "first divergence: ledger at 1.502 s" in str(
        p.figure.layout.annotations[0].text)
    e.controls["revoke_throws"].value = 1  # the figure follows the new diff (leases=2, revoke throws once)
    assert p.figure.layout.meta["strong_rows"] == len(e.pinned_diff.table()) == 12
    assert strong_marks(p.figure) == 14  # the changed and the moved rows are strong in both runs' lanes
    p.figure_toggle.value = False
    assert p.figure is None and p.figure_box.children == ()


def test_a_refused_value_keeps_the_diff_of_the_last_run_that_ran():
    e = Explorer("lease-lab", leases=3, pin=True)
    e.controls["leases"].value = 2
    before = e.pinning.summary.value
    e.controls["leases"].value = -1
    assert "not run" in e.status.value and e.result.run_id == 2
    assert e.pinning.summary.value == before and e.pinned_diff.names == ("pinned run 1", "run 2")


def test_unpin_forgets_the_pinned_run_and_later_runs_are_not_diffed():
    e = Explorer("lease-lab", leases=3, pin=True)
    e.controls["leases"].value = 2
    e.pinning.figure_toggle.value = True
    e.pinning.unpin_button.click()
    p = e.pinning
    assert e.pinned is None and e.pinned_diff is None
    assert p.unpin_button.disabled and p.figure_toggle.disabled and not p.figure_toggle.value
    assert p.figure_box.children == ()
    e.controls["leases"].value = 1
    assert e.pinned_diff is None
    assert p.state.lines() == ["No run pinned: pin this run to diff every later run against it."]
    e.pin()  # pinning again pins the current run
    assert e.pinned.run_id == 3 and repr(e) == "<Explorer lease-lab run=3 pinned=3>"


def test_each_explorer_pins_its_own_run():
    j = ak.Journal()
    a = Explorer("lease-lab", leases=3, journal=j, pin=True)
    b = Explorer("lease-lab", leases=3, journal=j)
    b.controls["leases"].value = 2
    assert b.pinned is None and b.pinned_diff is None
    a.controls["leases"].value = 1
    assert a.pinned.run_id == 1 and a.result.run_id == 4
    assert a.pinned_diff.names == ("pinned run 1", "run 4")
    b.pin()
    b.controls["leases"].value = 3
    assert b.pinned.run_id == 3 and b.pinned_diff.names == ("pinned run 3", "run 5")
    assert a.pinned.run_id == 1 and a.pinned_diff.names == ("pinned run 1", "run 4")


def test_the_exported_still_carries_the_pin_lines():
    e = Explorer("lease-lab", leases=3, pin=True)
    e.controls["leases"].value = 2
    still = e._repr_mimebundle_()["text/html"]
    assert '<div class="alarmkit-pin-summary"><b>Run 2 against pinned run 1' in still
    assert "alarmkit-pin-summary" not in Explorer("lease-lab", leases=1)._repr_mimebundle_()["text/html"]


class _Run:
    def __init__(self, run_id):
        self.run_id = run_id


class _Diff:
    same, matched, invariants = False, 0, pd.DataFrame()

    def table(self):
        return pd.DataFrame({"status": ["only_b"]})

    def summary(self):
        return "A and B differ.\nFirst divergence: <img src=x onerror=alert(1)> at 1 s."


def test_the_pin_lines_are_escaped_and_a_refused_diff_is_said(monkeypatch):
    monkeypatch.setattr(Pin, "differ", staticmethod(lambda a, b, names: _Diff()))
    p = Pin()
    p.pin(_Run(7))
    p.compare(_Run(8))
    assert p.lines() == ["Run 8 against pinned run 7: 1 differing alarm event (1 only in run 8); 0 matched.",
                         "First divergence: <img src=x onerror=alert(1)> at 1 s."]
    assert "<img" not in p.html() and "&lt;img src=x onerror=alert(1)&gt;" in p.html()

    def refuse(a, b, names):
        raise ak.InvalidValue("these events repeat a seq")

    monkeypatch.setattr(Pin, "differ", staticmethod(refuse))
    assert p.compare(_Run(9)) is None
    assert p.lines() == ["Run 9 could not be diffed against pinned run 7: these events repeat a seq"]


def test_the_diff_wing_gives_the_pin_its_differ():
    assert Pin.differ is ak.diff
