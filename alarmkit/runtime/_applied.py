"""Which entries of a fault plan injected anything in a run, and why the others did not.

A plan entry that matches nothing (``effect="revok"`` for ``revoke``) injects nothing, and a run
under it looks exactly like a run without it: these functions make that visible, so "no lost work
under these faults" is only said of faults that happened.
"""

from __future__ import annotations

import json
from typing import Any

from .._text import cut, short_repr

__all__ = ["entries", "unapplied", "summary_line", "run_record", "journal_summary", "with_plan_warning"]

_LISTS = ("uncounted", "effect_throws", "crashes", "crash_after_effect", "evictions", "restarts", "duplicates",
          "forgotten_alarms")
SHOW_REASONS = 10  # a warning names this many entries that never applied (RunResult.unapplied holds them all)
_OBJECT_FILTERED = ("handler_throws", "uncounted", "effect_throws", "crash_after_effect", "duplicates")


def entries(plan: Any) -> list[str]:
    """The labels of a plan's entries, in field order: ``handler_throws[0]``, ``crashes[1]``, ``latency``."""
    out = []
    for name in ("handler_throws", *_LISTS):
        value = getattr(plan, name)
        out += [name] if value == "always" else [f"{name}[{i}]" for i in range(len(value))]
    if plan.latency is not None:
        out.append("latency")
    return out


def unapplied(plan: Any) -> dict[str, str]:
    """Each entry that injected nothing in the plan's last run -> why, in words."""
    missing = [k for k, n in plan.applied().items() if n == 0]
    st = plan._state
    if not missing or "sim" not in st:
        return {}
    sim = st["sim"]
    hosts = sim.hosts()
    objects = sorted(h.label for h in hosts)
    mine = [h for h in hosts if plan.object is None or h.label == plan.object]
    return {key: _why(plan, key, st, sim, objects, mine) for key in missing}


def _why(plan: Any, key: str, st: dict, sim: Any, objects: list[str], mine: list) -> str:
    name, _, index = key.partition("[")
    entry = getattr(plan, name)
    part = entry[int(index[:-1])] if index else entry
    if name in _OBJECT_FILTERED and plan.object is not None and plan.object not in objects:
        return _not_seen("object", plan.object, objects)
    if name in ("handler_throws", "uncounted"):
        most = max((h.invocations for h in mine), default=0)
        if part == "always":
            return "alarm() never ran" if most == 0 else "every alarm() attempt had already failed by handler_throws"
        if most < part:
            return f"alarm() attempt {part} never happened (at most {most} on one object)"
        return f"alarm() attempt {part} had already failed by handler_throws"
    if name == "duplicates":
        most = max((n for o, n in st["successes"].items() if plan.object in (None, o)), default=0)
        return f"successful alarm() {part} never happened (at most {most} on one object)"
    if name in ("effect_throws", "crash_after_effect"):
        calls = {(o, e): n for (o, e), n in st["calls"].items() if plan.object in (None, o)}
        seen = sorted({e for _o, e in calls})
        if part.effect not in seen:
            return _not_seen("effect", part.effect, seen)
        most = max(n for (_o, e), n in calls.items() if e == part.effect)
        if name == "crash_after_effect":
            return f"effect {short_repr(part.effect, 80)} was called at most {most} times on one object; call {part.call} never came"
        return f"effect {short_repr(part.effect, 80)}: every call was already failed by another entry"
    if name == "crashes":
        return _why_crash(part, st["points"], objects)
    end = sim.now
    if name in ("evictions", "restarts", "forgotten_alarms") and part.at_ms > end:
        return f"{name[:-1]} at {part.at_ms} ms is after the run ended at {end} ms"
    if name == "evictions":
        if part.object is not None and part.object not in objects:
            return _not_seen("object", part.object, objects)
        return f"eviction at {part.at_ms} ms: no object{'' if part.object is None else ' ' + repr(part.object)} was awake"
    if name == "forgotten_alarms":
        if part.object is not None and part.object not in objects:
            return _not_seen("object", part.object, objects)
        if sim.profile.scheduler != "workerd":
            return f"the {sim.profile.scheduler} scheduler keeps no alarm apart from the stored one: nothing to forget"
        return f"forgotten alarm at {part.at_ms} ms: no object had an alarm waiting (none set, or alarm() running)"
    if name == "restarts":
        return f"restart at {part.at_ms} ms: the runtime was already down"
    return "no alarm fired, so no fire was late"


def _why_crash(c: Any, points: list[tuple], objects: list[str]) -> str:
    if c.object is not None and c.object not in objects:
        return _not_seen("object", c.object, objects)
    pts = [p for p in points if c.object in (None, p[0])]
    if not pts and c.object is not None:
        other = sorted({f"{p[0]}/{p[1]}" for p in points})
        return (f"object {short_repr(c.object, 80)} reached no await in this run, so it had no crash point; "
                f"crash points seen: {_listed(other)}")
    tasks = sorted({p[1] for p in pts})
    if c.task not in tasks:
        return _not_seen("task", c.task, tasks, "a task that reached an await in this run")
    runs = [p for p in pts if p[1] == c.task]
    if not any(p[2] == c.invocation for p in runs):
        return f"task {short_repr(c.task, 80)} invocation {c.invocation} never reached an await " \
               f"(at most {max(p[2] for p in runs)} invocations did)"
    most = max(p[3] for p in runs if p[2] == c.invocation)
    return f"task {short_repr(c.task, 80)} invocation {c.invocation} reached {most} await(s); await {c.at_await} never came"


def _not_seen(what: str, value: str, seen: list[str], kind: str = "") -> str:
    kind = kind or f"{'an' if what[0] in 'aeiou' else 'a'} {what} of this scenario"
    return f"{what} {short_repr(value, 80)} is not {kind}; {what}s seen: {_listed(seen)}"


def _listed(seen: list[str], most: int = 20) -> str:
    """``a, b, c`` (each name cut to 60 characters, the first ``most`` of them, the rest counted) or ``none``."""
    shown = ", ".join(cut(str(s), 60) for s in seen[:most])
    return (shown + (f" … and {len(seen) - most:,} more" if len(seen) > most else "")) or "none"


def summary_line(total: int, reasons: dict[str, str]) -> str:
    """``2 of 3 plan entries never applied: effect_throws[0]: effect 'revok' is not ...``; "" when
    every entry applied. ``reasons``: entry label -> why (``unapplied``)."""
    if not reasons:
        return ""
    noun = "plan entry" if total == 1 else "plan entries"
    said = "; ".join(f"{k}: {v}" for k, v in list(reasons.items())[:SHOW_REASONS])
    more = f"; … and {len(reasons) - SHOW_REASONS:,} more" if len(reasons) > SHOW_REASONS else ""
    return f"{len(reasons)} of {total} {noun} never applied: {said}{more}"


def run_record(faults: Any) -> tuple[dict | None, dict | None]:
    """``(applied counts, unapplied reasons)`` of a simulation's faults; ``(None, None)`` without a plan."""
    if not hasattr(faults, "applied"):
        return None, None
    return faults.applied(), unapplied(faults)


def journal_summary(run: dict) -> str:
    """The warning line for one journaled run (a row of ``runs``), or "" if every plan entry applied
    (or the run predates the record). The HTML report's summary shows it."""
    try:
        applied = json.loads(run.get("faults_applied") or "null")
        reasons = json.loads(run.get("faults_unapplied") or "null")
    except (TypeError, ValueError):
        return ""
    if not applied or not reasons:
        return ""
    return summary_line(len(applied), reasons)


def with_plan_warning(verdict: Any, run: dict) -> Any:
    """A journaled run (``run``: its ``runs`` row) whose fault plan had entries that injected nothing: its
    verdict with the warning ``RunResult.verdict`` carries (never a green 'held'); else the verdict as given."""
    from ..journal import Finding

    line = journal_summary(run)
    if verdict is None or not line or any(w.invariant == "fault plan not applied" for w in verdict.warnings):
        return verdict
    return verdict.with_warnings([Finding("fault plan not applied", None, None, f"fault plan not applied · {line}")])
