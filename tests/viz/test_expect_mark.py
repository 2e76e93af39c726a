"""A failed expectation is drawn red, never in a stray colour (a kind the timeline did not know was drawn in a
spare colour, which for ``expect_failed`` was green)."""

import alarmkit as ak
from alarmkit.viz._handout import MEANING
from alarmkit.viz._timeline import GREEN, NOTABLE, VERMILION, style
from alarmkit.viz.plots import timeline


def test_a_failed_expectation_is_drawn_red_and_in_the_glossary():
    assert style("expect_failed")[0] == VERMILION and "expect_failed" in NOTABLE and "expect_failed" in MEANING
    sim = ak.Simulation(seed=0)
    sim.advance(1_000)
    sim.journal_event("expect_failed", detail={"message": "INBOX:inbox kv 'm1': expected 'hi', got null"})
    fig = timeline(sim.events())
    traces = [t for t in fig.data if "expect_failed" in (t.name or "")]
    assert len(traces) == 1
    colour = traces[0].marker.color
    assert colour == VERMILION and colour != GREEN, colour
