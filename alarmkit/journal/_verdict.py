"""A run's verdict, said first: which obligations and invariants were checked, and each broken one
with its object, its time and a one-line cause read from the journal.

The checks are ``alarmkit.invariants`` (``check`` for a ``run_scenario`` result, ``check_run`` for a
journal's events). The verdict never claims more than was checked: "all obligations held (N checked)"
only when N > 0; a run without declared obligations says that only the run-wide invariants ran; a
run whose events could not be read says nothing was checked.

Green only when something was checked and held, with nothing to warn of. A run that broke nothing but
abandoned an alarm, left a broken facet, left obligations overdue, left rows its scenario says should be
gone, held only because no fault hit an anti-pattern, or skipped an invariant it states (a worker drive
without expectations) is amber: ``status == "warning"``, each warning named in a line starting ``!``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

import pandas as pd

from ._frames import effect_idents
from .invariants import INVARIANTS, check, check_run
from .._text import esc, fmt_ms

__all__ = ["Verdict", "Finding", "verdict_of", "verdict_of_events", "NEEDS_OBLIGATIONS", "STATUS_COLOUR"]

# invariants that compare the run with its obligations; the others hold for any run
NEEDS_OBLIGATIONS = ("lost", "early_effect", "late", "alarm_pushed_past_due", "dropped_wakeup")
STATUS_COLOUR = {"held": "#1b6e3a", "warning": "#8a5a00", "broken": "#b00020", "unchecked": "#7a5a00"}
SHOW_FINDINGS = 6  # the verdict names this many broken things; the rest are counted in one line


@dataclass(frozen=True)
class Finding:
    """One broken obligation or invariant: ``text`` is the one-line cause."""

    invariant: str
    object: str | None
    t_ms: int | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "object": self.object, "t_ms": self.t_ms, "text": self.text}


@dataclass(frozen=True)
class Verdict:
    """What was checked and what broke. ``held`` is True (nothing broken), False (something broken)
    or None (nothing could be checked; ``note`` says why)."""

    held: bool | None
    obligations: int  # obligations checked
    invariants: tuple[str, ...]  # invariants checked
    findings: tuple[Finding, ...] = ()
    overdue: tuple[Finding, ...] = ()  # obligations not done at the end without a chance to do them (not broken)
    note: str = ""
    misses: tuple[dict, ...] = field(default=(), repr=False)  # due-but-never-ran obligations, for the timeline
    warnings: tuple[Finding, ...] = ()  # not broken, but never green: an abandoned alarm, rows left, a skipped check

    @property
    def status(self) -> str:
        """``broken`` (red), ``warning`` (amber: nothing broken, something to look at), ``held`` (green:
        something was checked and held) or ``unchecked`` (nothing could be checked)."""
        if self.held is None:
            return "unchecked"
        if self.held is False:
            return "broken"
        return "warning" if self.warnings or self.overdue else "held"

    def with_warnings(self, extra: Iterable[Finding]) -> Verdict:
        """This verdict with more warnings (the scenario's own: rows left, an anti-pattern that held)."""
        extra = tuple(extra)
        return replace(self, warnings=self.warnings + extra) if extra else self

    @property
    def headline(self) -> str:
        if self.held is None:
            return f"nothing was checked: {self.note}"
        if self.status == "warning":
            what = list(dict.fromkeys(f.invariant for f in self.warnings + self.overdue))
            return f"WARNING, nothing broken but: {', '.join(what)} (each named below); {self._held_line()}"
        return self._held_line()

    def _held_line(self) -> str:
        inv = f"{len(self.invariants)} invariants"
        if self.held is False:
            n = len(self.findings)
            lost = sum(f.invariant == "lost" for f in self.findings)
            what = f"{lost} of {self.obligations} obligations lost" if lost else f"{self.obligations} obligations checked"
            return f"BROKEN: {n} {'violation' if n == 1 else 'violations'} ({what}; {inv} checked)"
        if self.obligations:
            return f"all obligations held ({self.obligations} checked; {inv} checked, none broken)"
        return (f"no obligations declared, so none checked; {len(self.invariants)} run-wide invariants checked "
                f"({', '.join(self.invariants)}), none broken")

    def lines(self, limit: int = SHOW_FINDINGS) -> list[str]:
        """The headline, then one line per broken thing (at most ``limit``, the rest counted), then the
        overdue obligations and the note."""
        out = [self.headline]
        out += [f"✗ {f.text}" for f in self.findings[:limit]]
        if len(self.findings) > limit:
            rest = pd.Series([f.invariant for f in self.findings[limit:]]).value_counts()
            out.append("✗ … and " + ", ".join(f"{n} more {k}" for k, n in rest.items()))
        out += [f"! {f.text}" for f in self.warnings[:limit]]
        out += [f"! {f.text}" for f in self.overdue[:limit]]
        if self.note and self.held is not None:
            out.append(self.note)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict[str, Any]:
        return {"held": self.held, "headline": self.headline, "obligations": self.obligations,
                "invariants": list(self.invariants), "findings": [f.to_dict() for f in self.findings],
                "overdue": [f.to_dict() for f in self.overdue], "warnings": [f.to_dict() for f in self.warnings],
                "status": self.status, "note": self.note, "lines": self.lines()}

    def html(self) -> str:
        """The verdict as an escaped HTML block (a report's first row, the widget's banner)."""
        colour = STATUS_COLOUR[self.status]
        rows = [f'<div class="verdict-head" style="font-weight:600;color:{colour}">{esc(self.headline)}</div>']
        for line in self.lines()[1:]:
            red, amber = line.startswith("✗"), line.startswith("!")
            cls = "verdict-broken" if red else "verdict-warning" if amber else "verdict-note"
            rows.append(f'<div class="{cls}" style="color:{"#b00020" if red else "#8a5a00" if amber else "#555"}">'
                        f'{esc(line)}</div>')
        return (f'<div class="verdict" data-held="{esc(str(self.held).lower())}" data-status="{self.status}">'
                f'{"".join(rows)}</div>')

    def _repr_html_(self) -> str:
        return self.html()


def verdict_of(result: Any) -> Verdict:
    """The verdict of a ``run_scenario`` result: ``ak.check`` over its obligations and every invariant."""
    report = check(result)
    events = result.events
    summary = getattr(result, "summary", {}) or {}
    stated = summary.get("expectations")
    if stated == 0:  # a worker drive without "expect": the invariant had nothing to check
        names = tuple(k for k in INVARIANTS if k != "expect")
        v = _from_report(report, events, len(result.obligations), names)
        return v.with_warnings([Finding("expect skipped", None, None,
                                        "expect skipped: the drive states no expectations, so nothing was checked "
                                        "at the end (an \"expect\" list in the drive says what must hold)")])
    names = tuple(k for k in INVARIANTS if k != "expect" or stated)  # a scenario states no expectations
    return _from_report(report, events, len(result.obligations), names)


def verdict_of_events(events: pd.DataFrame, obligations: Iterable[Any] | None = None,
                      horizon_ms: int | None = None) -> Verdict:
    """The verdict of a journal's run: without ``obligations`` (a journal does not store them) only the
    run-wide invariants are checked, and the verdict says so."""
    if events is None or not len(events):
        return Verdict(None, 0, (), note="the run has no events")
    obs = list(obligations or [])
    if obs:
        report = check_run(events, obs, horizon_ms)
        return _from_report(report, events, len(obs))
    wanted = [k for k in INVARIANTS if k not in NEEDS_OBLIGATIONS]
    report = check_run(events, [], horizon_ms, invariants=wanted)
    v = _from_report(report, events, 0, wanted)
    note = ("this run's obligations are not stored in the journal, so lost work was not checked; "
            "`alarmkit run SCENARIO` or ak.check(run_scenario(...)) checks them")
    return Verdict(v.held, 0, v.invariants, v.findings, v.overdue, note, warnings=v.warnings)


def _from_report(report: Any, events: pd.DataFrame, n_obligations: int,
                 invariants: Iterable[str] | None = None) -> Verdict:
    names = tuple(invariants or INVARIANTS)
    if not n_obligations:
        names = tuple(k for k in names if k not in NEEDS_OBLIGATIONS)
    findings: list[Finding] = []
    misses = []
    for v in report.violations:
        if v.invariant == "lost":
            ob = next((o for o in report.obligations if o["object"] == v.object and o["key"] == v.key
                       and o["status"] == "lost"), None)
            if ob is not None:
                findings.append(Finding("lost", v.object, ob["due_ms"], _lost_cause(events, ob)))
                misses.append({"object": ob["object"], "due_ms": ob["due_ms"], "status": "lost",
                               "text": findings[-1].text})
                continue
        where = f"{v.object}: " if v.object is not None else ""
        findings.append(Finding(v.invariant, v.object, v.t_ms, f"{v.invariant} · {where}{v.message}"))
    overdue = []
    for o in report.obligations:
        if o["status"] == "stuck":
            overdue.append(Finding("overdue", o["object"], o["due_ms"], f"not broken, overdue: {o['object']}: {o['why']}"))
            misses.append({"object": o["object"], "due_ms": o["due_ms"], "status": "overdue", "text": o["why"]})
    # the lost ones first (what the reader asked about), then in time order
    findings.sort(key=lambda f: (f.invariant != "lost", f.t_ms if f.t_ms is not None else -1))
    return Verdict(not findings, n_obligations, names, tuple(findings), tuple(overdue), misses=tuple(misses),
                   warnings=_event_warnings(events))


def _event_warnings(events: pd.DataFrame) -> tuple[Finding, ...]:
    """What a run that broke nothing still must not show green: each abandoned alarm (with the error it
    failed with and any later revival), each effect that ran more than once on its object, each object a
    broken facet or actor left unusable."""
    out = []
    if events is None or not len(events):
        return ()
    ev = events.sort_values("seq") if "seq" in events.columns else events
    for _, row in ev[ev["kind"] == "abandoned"].iterrows():
        obj = row["object_id"]
        mine = ev[ev["object_id"].astype(object) == obj]
        errs = mine[(mine["kind"] == "handler_error") & (mine["seq"] < row["seq"])]
        err = ""
        if len(errs):
            d = _detail(errs.iloc[-1]["detail"])
            msg = str(d.get("message") or "").strip().splitlines()
            err = f" (last error {d.get('error', 'an error')}" + (f": {msg[0][:120]}" if msg else "") + ")"
        n = _detail(row["detail"]).get("attempts", "its")
        later = mine[(mine["kind"].isin(["revive", "revival"])) & (mine["seq"] > row["seq"])]
        after = (f"; revived at {fmt_ms(int(later.iloc[0]['t_ms']))}" if len(later) else
                 "; nothing ran it again, so the work it owed was not done")
        out.append(Finding("abandoned", obj, int(row["t_ms"]),
                           f"abandoned · {obj}: the platform gave up on its alarm after {n} attempts at "
                           f"{fmt_ms(int(row['t_ms']))}{err}{after}"))
    eff = ev["kind"] == "effect"
    if eff.any():  # at-least-once delivery ran an effect again: fine only if it is idempotent, never green
        idents = effect_idents(ev)
        runs = pd.DataFrame({"obj": ev.loc[eff, "object_id"].astype(str), "ident": idents, "t": ev.loc[eff, "t_ms"]})
        for (obj, ident), group in runs.groupby(["obj", "ident"], sort=False):
            if len(group) > 1:
                name, key = ident.split("\0", 1)
                out.append(Finding("duplicate effect", obj, int(group["t"].iloc[1]),
                                   f"duplicate effect · {obj}: {name}({key}) ran {len(group)} times (at-least-once "
                                   f"delivery: harmless only if {name} is idempotent)"))
    for _, row in ev[ev["kind"].isin(["facet_broken", "actor_broken"])].iterrows():
        what = "facet" if row["kind"] == "facet_broken" else "actor"
        reason = _detail(row["detail"]).get("reason") or _detail(row["detail"]).get("error") or ""
        out.append(Finding(str(row["kind"]), row["object_id"], int(row["t_ms"]),
                           f"{row['kind']} · {row['object_id']}: the {what} broke at {fmt_ms(int(row['t_ms']))}"
                           + (f" ({str(reason)[:160]})" if reason else "")))
    out = out[:49]
    refusal = _refusal_warning(ev)
    return tuple(out + [refusal] if refusal is not None else out)


REFUSAL_SHOWN = 160  # the first refusal's text in the verdict's line is cut to this


def _refusal_warning(ev: pd.DataFrame) -> Finding | None:
    """One warning counting the ``refused`` events: the code touched surface alarmkit does not simulate (a
    library may have caught it and gone on: the run is not what workerd would have run), never green."""
    rows = ev[ev["kind"] == "refused"]
    if not len(rows):
        return None
    first = rows.iloc[0]
    text = " ".join(str(_detail(first["detail"]).get("text") or "").split())
    if len(text) > REFUSAL_SHOWN:
        text = text[:REFUSAL_SHOWN - 1] + "…"
    n = len(rows)
    obj = first["object_id"] if pd.notna(first["object_id"]) else None
    return Finding("refused", obj, int(first["t_ms"]),
                   f"{n} {'refusal' if n == 1 else 'refusals'}: the code touched surface alarmkit does not simulate "
                   f"(first: at {fmt_ms(int(first['t_ms']))}, {text}); the run is not what workerd would run even "
                   "if the code caught it: bind a fake with sim.load_worker(..., bindings={...}) (or run_drive's "
                   "bindings, or --bind)")


def _detail(text: Any) -> dict:
    try:
        d = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _lost_cause(events: pd.DataFrame, ob: dict) -> str:
    """``send_digest(2) on naive, due at 120 s, never ran: its alarm() run at 120.002 s failed
    (DownstreamDown) after setting the next alarm (180 s), which replaced the retry``."""
    obj, due = ob["object"], int(ob["due_ms"])
    what = f"{ob['effect']}({ob['key']!r}) on {obj}, due at {fmt_ms(due)}, never ran"
    ev = events[events["object_id"].astype(object) == obj].sort_values("seq")
    pending, changed = None, None  # the object's stored alarm when the work fell due, and what set it
    for kind, t, sched in zip(ev["kind"], ev["t_ms"], ev["scheduled_ms"]):
        if t > due:
            break
        if kind in ("arm", "proxy_arm") and pd.notna(sched):
            pending, changed = int(sched), (kind, int(t))
        elif kind in ("disarm", "fire"):  # a fire consumes the alarm; an arm inside the run sets the next
            pending, changed = None, (kind, int(t))
    if pending is None and changed is not None and changed[0] == "disarm":
        return f"{what}: its alarm was deleted at {fmt_ms(changed[1])}"
    if pending is None and changed is not None:
        return f"{what}: the alarm() run at {fmt_ms(changed[1])} left no alarm for it"
    if pending is None:
        return f"{what}: no alarm was set for it"
    if pending > due:
        return f"{what}: its alarm was replaced at {fmt_ms(changed[1])} by a later one ({fmt_ms(pending)})"
    cutoff = ev[ev["t_ms"] <= due]["seq"].max()
    fires = ev[(ev["kind"] == "fire") & (ev["seq"] > cutoff)]
    if not len(fires):
        return f"{what}: its alarm, set for {fmt_ms(pending)}, never fired"
    first = fires.iloc[0]
    run = ev[(ev["seq"] > first["seq"])]
    end = run[run["kind"].isin(["handler_ok", "handler_error", "fire"])]
    if len(end) and end.iloc[0]["kind"] == "handler_error":
        err = _detail(end.iloc[0]["detail"]).get("error", "an error")
        inside = run[(run["seq"] < end.iloc[0]["seq"]) & (run["kind"] == "arm") & run["retry_count"].isna()]
        retry = run[(run["seq"] > end.iloc[0]["seq"]) & (run["kind"] == "retry_scheduled")].head(1)
        if len(inside) and not (len(retry) and retry.iloc[0]["seq"] < _next_fire_seq(run, end.iloc[0]["seq"])):
            return (f"{what}: its alarm() run at {fmt_ms(first['t_ms'])} failed ({err}) after setting the next "
                    f"alarm ({fmt_ms(inside.iloc[-1]['scheduled_ms'])}), which replaced the retry")
        gave_up = run[run["kind"] == "abandoned"].head(1)
        if len(gave_up):
            n = _detail(gave_up.iloc[0]["detail"]).get("attempts", "every")
            return (f"{what}: alarm() failed ({err}) from {fmt_ms(first['t_ms'])} on, and the platform gave up "
                    f"after {n} attempts at {fmt_ms(gave_up.iloc[0]['t_ms'])}")
        return f"{what}: its alarm() run at {fmt_ms(first['t_ms'])} failed ({err}) and nothing ran it again"
    return f"{what}: alarm() ran at {fmt_ms(first['t_ms'])} and returned without doing it"


def _next_fire_seq(run: pd.DataFrame, after: int) -> float:
    nxt = run[(run["seq"] > after) & (run["kind"] == "fire")]
    return float(nxt.iloc[0]["seq"]) if len(nxt) else float("inf")
