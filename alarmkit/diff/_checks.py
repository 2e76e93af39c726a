"""The invariants and obligations that hold in one run and not the other (``alarmkit.invariants``)."""

from __future__ import annotations

from typing import Any

import duckdb
import pandas as pd

from ..errors import AlarmkitError
from ..journal.invariants import DEFAULT_GRACE_MS, check, check_run
from ._inputs import Side

__all__ = ["compare_checks", "INVARIANT_COLUMNS", "NEED_NO_OBLIGATIONS"]

INVARIANT_COLUMNS = ["what", "name", "object", "key", "in_a", "in_b", "message_a", "message_b"]
# The invariants check_run can judge from the events alone (see alarmkit/invariants.py).
NEED_NO_OBLIGATIONS = ("early_fire", "concurrent_alarm", "runaway_retries")


def _report(side: Side, only: tuple[str, ...] | None):
    if side.result is not None and getattr(side.result, "sim", None) is not None:
        return check(side.result, invariants=only)
    frame = side.events.to_pandas()
    grace = DEFAULT_GRACE_MS if side.grace_ms is None else side.grace_ms
    return check_run(frame, side.obligations or [], side.horizon_ms, invariants=only, grace_ms=grace)


def _count(n: int) -> str:
    return {0: "never ran", 1: "ran once", 2: "ran twice"}.get(n, f"ran {n} times")


def compare_checks(sides: dict[str, Side], con: duckdb.DuckDBPyConnection,
                   names: tuple[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """(one row per violation or obligation outcome found in one run and not the other, notes)."""
    notes: list[str] = []
    unknown = [names[i] for i, s in enumerate(("a", "b")) if sides[s].obligations is None]
    only = NEED_NO_OBLIGATIONS if unknown else None
    if unknown:
        notes.append(f"obligations of {' and '.join(unknown)} not known (a journal or imported run): compared only "
                     f"the invariants that need none ({', '.join(NEED_NO_OBLIGATIONS)}), and no obligation")
    reports = {}
    for s, name in zip(("a", "b"), names):
        try:
            reports[s] = _report(sides[s], only)
        except (AlarmkitError, AttributeError, KeyError, TypeError, ValueError) as err:
            # events the checker cannot read (a hand-made frame: an effect without a detail) are
            # said, not skipped silently
            notes.append(f"invariants not checked: {name} could not be checked "
                         f"({type(err).__name__}: {str(err)[:120]})")
            return pd.DataFrame(columns=INVARIANT_COLUMNS), notes
    pair = {}
    for a_obj, b_obj, p in con.execute("SELECT a_obj, b_obj, pair FROM objmap").fetchall():
        pair[("a", a_obj)] = p
        pair[("b", b_obj)] = p

    def obj(s: str, o: Any) -> Any:
        return pair.get((s, o), o)

    found: dict[tuple, dict[str, Any]] = {}
    for s in ("a", "b"):
        for v in reports[s].violations:
            k = ("invariant", v.invariant, obj(s, v.object), repr(v.key))
            found.setdefault(k, {})[s] = v.message
    rows = []
    for (what, name, o, key), seen in found.items():
        if len(seen) == 1:
            rows.append([what, name, o, key, "a" in seen, "b" in seen, seen.get("a"), seen.get("b")])
    if not unknown:
        obs = {s: {(obj(s, o["object"]), o["effect"], repr(o["key"])): o for o in reports[s].obligations}
               for s in ("a", "b")}
        for k in sorted(set(obs["a"]) | set(obs["b"]), key=str):
            oa, ob = obs["a"].get(k), obs["b"].get(k)
            sa = None if oa is None else (oa["status"], oa["count"])
            sb = None if ob is None else (ob["status"], ob["count"])
            if sa != sb:
                text = {s: None if o is None else f"{o['status']}, {_count(o['count'])}"
                        for s, o in (("a", oa), ("b", ob))}
                rows.append(["obligation", f"{k[1]}({k[2]})", k[0], k[2], oa is not None and oa["status"] == "done",
                             ob is not None and ob["status"] == "done", text["a"], text["b"]])
    return pd.DataFrame(rows, columns=INVARIANT_COLUMNS), notes
