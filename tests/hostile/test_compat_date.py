"""Hostile compatibility dates and same-instant order settings: any value either makes a simulation
(a real YYYY-MM-DD date, a known order) or is refused with one InvalidValue line naming it; never another error."""

import datetime

from hypothesis import given, settings
from tiers import tier_examples  # a tenth of the examples in the quick tier
from hypothesis import strategies as st

import alarmkit as ak
from alarmkit.errors import InvalidValue

VALUES = st.one_of(st.text(max_size=14), st.dates().map(str), st.integers(), st.none(), st.floats(allow_nan=True),
                   st.binary(max_size=10))


def _is_date(v):
    try:
        return isinstance(v, str) and len(v) == 10 and datetime.date.fromisoformat(v) is not None
    except ValueError:
        return False


@settings(max_examples=tier_examples(200), deadline=None)
@given(VALUES)
def test_any_compatibility_date_is_taken_or_refused_in_one_line(value):
    try:
        sim = ak.Simulation(compatibility_date=value)
    except InvalidValue as err:
        msg = str(err)
        assert not _is_date(value)
        assert "\n" not in msg and "compatibility_date must be a date 'YYYY-MM-DD'" in msg
        return
    assert _is_date(value) and sim.profile.compatibility_date == value
    assert sim.profile.flag("delete_all_deletes_alarm") == (value >= "2026-02-24")


@settings(max_examples=tier_examples(100), deadline=None)
@given(VALUES)
def test_any_same_instant_order_is_taken_or_refused_in_one_line(value):
    try:
        ak.Simulation(same_instant_order=value)
    except InvalidValue as err:
        assert value not in ("seeded", "arming") and "\n" not in str(err)
        assert "same_instant_order must be one of ['seeded', 'arming']" in str(err)
        return
    assert value in ("seeded", "arming")
