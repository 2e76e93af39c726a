"""The plain sentences of a ``RunDiff``: where two runs part, why, and what differs after."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..viz.plots import fmt_ms
from ._sql import ALIGNMENTS, EPOCH_MS

__all__ = ["sentences", "divergence_text", "SHOW"]

SHOW = 6  # sentences of one sort before "and N more"


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _t(v: Any) -> str:
    """A time as the summary says it: virtual time as ``3.072 s``, an epoch time (a real run's, or a
    clock started at one) as UTC, ``2026-12-01 10:18:17.280 UTC``."""
    n = _int(v)
    if n is None:
        return "?"
    if n > EPOCH_MS:
        import datetime as dt

        try:
            return dt.datetime.fromtimestamp(n / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
        except (OverflowError, ValueError, OSError):
            pass
    return fmt_ms(n)


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


def _shift(delta: Any) -> str:
    """B's time minus A's as words: '5 s later', '1 ms earlier'."""
    n = _int(delta) or 0
    return "at the same time" if not n else f"{fmt_ms(abs(n))} {'later' if n > 0 else 'earlier'}"


def _off(r: pd.Series) -> bool:
    """Whether a late fire's time differs by more than its lateness says (its alarm was due elsewhere too)."""
    d, la, lb = _int(r["delta_ms"]), _int(r["late_a"]), _int(r["late_b"])
    return bool(d) and (la is None or lb is None or d != lb - la)


def _moved(r: pd.Series, a: str, b: str) -> str:
    """A moved row: an alarm set for another time, or an event that happens at another time."""
    sa, sb = _int(r["scheduled_a"]), _int(r["scheduled_b"])
    if r["cls"] in ("arm", "fire", "fire_skipped") and sa is not None and sb is not None and sa != sb:
        return (f"{r['object']}'s {r['cls']} for {_t(sa)} in {a} is for {_t(sb)} in {b} "
                f"({_shift(sb - sa)}; at {_t(r['t_a'])} and {_t(r['t_b'])}).")
    kind = str(r["kind"])
    return (f"{r['object'] or 'the runtime'}'s {kind} at {_t(r['t_a'])} in {a} happens {_shift(r['delta_ms'])} "
            f"in {b} (at {_t(r['t_b'])}).")


def _more(lines: list[str], rest: int, what: str) -> list[str]:
    return lines + ([f"… and {rest} more {what}."] if rest > 0 else [])


def sentences(d: Any) -> list[str]:
    """The summary's sentences, most telling first."""
    a, b = d.names
    how = ALIGNMENTS[d.align]
    how += f", {d.tolerance_ms} ms tolerance" if d.tolerance_ms else ""
    # "at the same times" only when they are; a tolerance that let differences pass says the largest
    when = ("at the same times" if not d.largest_ms else
            f"within {fmt_ms(d.tolerance_ms)} of each other (the largest difference {fmt_ms(d.largest_ms)})")
    out: list[str] = []
    t = d.differences
    if d.same and not d.matched:  # nothing compared is no agreement
        out.append(f"{a} and {b} have no alarm events to compare ({d.events[0]:,} and {d.events[1]:,} events of "
                   f"other kinds, which diff does not align): nothing was compared.")
    elif d.same:
        out.append(f"{a} and {b} agree: {d.matched:,} alarm events matched {when} ({how}).")
    else:
        out.append(f"{a} and {b} differ in {len(t):,} alarm event{'s' * (len(t) != 1)}; {d.matched:,} matched ({how}).")
        fd = d.first_divergence
        out.append(f"First divergence: {fd.text}." if fd else
                   "No event is missing from either run and none ends otherwise.")
        if d.shift_ms:
            other = "align='first_request' counts each run from its first request" if d.align != "first_request" \
                else "the runs' first requests are as far apart"
            out.append(f"Every event {a} and {b} share happens {_shift(d.shift_ms)} in {b}: the whole run is "
                       f"shifted ({other}).")
    late = t[t["status"] == "late"]
    out += _more([f"{_alarm(r, 'a')} fires {_t(r['late_a'])} late in {a} and {_t(r['late_b'])} late in {b}"
                  + (f" ({_shift(r['delta_ms'])}, at {_t(r['t_b'])})." if _off(r) else ".")
                  for _, r in late.head(SHOW).iterrows()], len(late) - SHOW, "late fires")
    moved = t[t["status"] == "moved"]
    out += _more([_moved(r, a, b) for _, r in moved.head(SHOW).iterrows()], len(moved) - SHOW, "moved events")
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
