"""The plain sentences of a ``RunDiff``: where two runs part, why, and what differs after."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..viz.plots import fmt_ms

__all__ = ["sentences", "divergence_text", "SHOW"]

SHOW = 6  # sentences of one sort before "and N more"


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _t(v: Any) -> str:
    return "?" if _int(v) is None else fmt_ms(int(v))


def _detail(row: pd.Series) -> dict:
    d = row.get("detail")
    try:
        v = json.loads(d) if isinstance(d, str) else {}
    except ValueError:
        v = {}
    return v if isinstance(v, dict) else {}


def _alarm(r: pd.Series, s: str) -> str:
    sched = r[f"scheduled_{s}"]
    rc = _int(r["retry_count"]) or 0
    return f"{r['object']}'s alarm due {_t(sched)}" + (f" (retry {rc})" if rc else "")


def _last_arm(chain: pd.DataFrame | None) -> str:
    """How the chain last set the alarm: 'its alarm moved later to 60 s at 1.2 s (cause: constructor)'."""
    if chain is None or chain.empty:
        return ""
    arms = chain[chain["kind"].isin(["arm", "disarm"])]
    if arms.empty:
        return ""
    a = arms.iloc[-1]
    d = _detail(a)
    if a["kind"] == "disarm":
        text = f"its alarm was deleted at {_t(a['t_ms'])}"
    else:
        move = {"new": "set", "earlier": "moved earlier", "later": "moved later"}.get(d.get("direction"), "set")
        text = f"its alarm {move} to {_t(a['scheduled_ms'])} at {_t(a['t_ms'])} (cause: {d.get('cause', '?')})"
    return text + (" and user code never set it again" if chain.attrs.get("later_arms") == 0 else "")


def divergence_text(r: pd.Series, names: tuple[str, str], chain: dict[str, pd.DataFrame]) -> str:
    """One sentence for the first divergence (a row of ``RunDiff.table()``)."""
    status, obj, kind, what = r["status"], r["object"], r["kind"], r["what"]
    if status == "changed":
        ka, kb = str(kind).split(" → ") if " → " in str(kind) else (kind, kind)
        if r["cls"] == "end":
            return (f"{_alarm(r, 'a')} ends with {ka} in {names[0]} and with {kb} in {names[1]} "
                    f"at {_t(r['t_b'])}")
        return f"{obj}'s {r['cls']} at {_t(r['t_a'])} is {ka} ({r['what']}) in {names[0]} and {kb} in {names[1]}"
    y, s = (names[1], "b") if status == "only_b" else (names[0], "a")
    x = names[0] if s == "b" else names[1]
    t = _t(r[f"t_{s}"])
    why = _last_arm(chain.get(x))
    if r["cls"] == "fire":
        return f"{x} never fires {_alarm(r, s)}; {y} fires it at {t}" + (f". In {x}, {why}" if why else "")
    if r["cls"] == "effect":
        n = _int(r["n"]) or 1
        if n > 1:
            return (f"{y} runs {what} on {obj} again at {t}: a duplicate ({y} runs it at least {n} times, "
                    f"{x} {n - 1})")
        return f"{x} never runs {what} on {obj}; {y} runs it at {t}" + (f". In {x}, {why}" if why else "")
    if r["cls"] == "crash":
        rows = chain.get(y)
        reason = ""
        if rows is not None and not rows.empty:
            crash = rows[rows["kind"] == "crash"]
            fault = rows[rows["kind"] == "fault"]
            if len(crash):
                reason = str(_detail(crash.iloc[-1]).get("reason", ""))
            if len(fault):
                reason += f"{'; ' if reason else ''}fault {_detail(fault.iloc[-1]).get('fault', '?')}"
        return f"{y} crashes {obj} at {t}" + (f" ({reason})" if reason else "") + f"; {x} does not"
    if r["cls"] == "arm":
        return f"{y} arms {obj} for {_t(r[f'scheduled_{s}'])} at {t} (cause: {what or '?'}); {x} does not"
    if r["cls"] == "end":
        return f"{_alarm(r, s)} ends with {kind} in {y} at {t}; in {x} it has no such end"
    if not obj:  # a run-wide event (a restart has no object)
        return f"{y} has a {kind} at {t}; {x} does not"
    return f"{y} has {kind} on {obj} at {t}; {x} does not"


def _more(lines: list[str], rest: int, what: str) -> list[str]:
    return lines + ([f"… and {rest} more {what}."] if rest > 0 else [])


def sentences(d: Any) -> list[str]:
    """The summary's sentences, most telling first."""
    a, b = d.names
    how = {"exact": "exact times", "first_request": "each counted from its first request"}[d.align]
    how += f", {d.tolerance_ms} ms tolerance" if d.tolerance_ms else ""
    out: list[str] = []
    t = d.differences
    if d.same and not d.matched:  # nothing compared is no agreement
        out.append(f"{a} and {b} have no alarm events to compare ({d.events[0]:,} and {d.events[1]:,} events of "
                   f"other kinds, which diff does not align): nothing was compared.")
    elif d.same:
        out.append(f"{a} and {b} agree: {d.matched:,} alarm events matched ({how}).")
    else:
        out.append(f"{a} and {b} differ in {len(t):,} alarm event{'s' * (len(t) != 1)}; {d.matched:,} matched ({how}).")
        fd = d.first_divergence
        out.append(f"First divergence: {fd.text}." if fd else
                   "No event is missing from either run and none ends otherwise.")
    late = t[t["status"] == "late"]
    out += _more([f"{_alarm(r, 'a')} fires {_t(r['late_a'])} late in {a} and {_t(r['late_b'])} late in {b}."
                  for _, r in late.head(SHOW).iterrows()], len(late) - SHOW, "late fires")
    moved = t[t["status"] == "moved"]
    out += _more([f"{r['object']}'s {r['cls']} for {_t(r['scheduled_a'])} in {a} is for {_t(r['scheduled_b'])} in {b}."
                  for _, r in moved.head(SHOW).iterrows()], len(moved) - SHOW, "moved alarms")
    counts = []
    for _, r in d.counts.iterrows():
        parts = []
        for c, one, many in (("fires", "fire", "fires"), ("retries", "retry", "retries"),
                             ("abandonments", "abandonment", "abandonments"), ("effects", "effect", "effects"),
                             ("duplicates", "duplicate effect", "duplicate effects")):
            n = int(r[f"{c}_diff"])
            if n:
                parts.append(f"{abs(n)} {'more' if n > 0 else 'fewer'} {one if abs(n) == 1 else many}")
        if parts:
            counts.append(f"On {r['object']}, {b} has {', '.join(parts)} than {a}.")
    out += _more(counts[:SHOW], len(counts) - SHOW, "objects with other counts")
    inv = d.invariants
    lines = []
    for _, r in inv.head(SHOW).iterrows():
        if r["what"] == "obligation":
            lines.append(f"Obligation {r['name']} on {r['object']}: {r['message_a'] or 'not owed'} in {a}, "
                         f"{r['message_b'] or 'not owed'} in {b}.")
        else:
            where = a if r["in_a"] else b
            msg = r["message_a"] if r["in_a"] else r["message_b"]
            lines.append(f"{r['name']} on {r['object']} in {where} only: {msg}.")
    out += _more(lines, len(inv) - SHOW, "invariant differences")
    out += [f"Note: {n}." for n in d.notes]
    return out
