"""``alarmkit record``'s drive, read in the one drive format of ``alarmkit worker`` (``from_drive``), or in its
old script format (``is_old_script``); and a check's text in words (``check_text``, ``violation_text``)."""

from __future__ import annotations

from typing import Any

from .._text import clean
from ..errors import AlarmkitError

__all__ = ["MAX_STEPS", "check_text", "from_drive", "is_old_script", "violation_text"]

MAX_STEPS = 10_000  # steps one recording may hold (it runs in wall-clock time)


def _whole(v: Any, lo: int, hi: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and lo <= v <= hi


def is_old_script(script: Any) -> bool:
    """Record's old script: ``until_ms`` at the top, or steps with ``object`` or ``at_ms``."""
    if not isinstance(script, dict):
        return False
    steps = script.get("steps") if isinstance(script.get("steps"), list) else []
    return "until_ms" in script or any(isinstance(s, dict) and ("object" in s or "at_ms" in s) for s in steps)


def from_drive(drive: Any, name: str = "drive") -> dict:
    """A drive (the format of ``alarmkit worker``) as record's script: ``call`` steps only, ``at``/``after``
    summed into ``at_ms``, ``name`` as ``object``, ``until`` as ``until_ms``."""
    if not isinstance(drive, dict) or not isinstance(drive.get("steps"), list) or not drive["steps"]:
        raise AlarmkitError(f"{name} needs a non-empty list 'steps'")
    extra = sorted(set(map(str, drive)) - {"steps", "until"})
    if extra:
        raise AlarmkitError(f"{name}: record takes \"steps\" and \"until\"; {extra[0]!r} is for the simulator "
                            "(alarmkit worker): leave it out of the drive you record")
    steps, t = [], 0
    for i, s in enumerate(drive["steps"][:MAX_STEPS + 1]):
        if not isinstance(s, dict) or "call" not in s:
            kind = next((k for k in ("fetch", "restart", "evict") if isinstance(s, dict) and k in s), None)
            raise AlarmkitError(f"{name}: step {i} " + (f"is a {kind} step; record drives RPC calls only (\"call\")"
                                                         if kind else "needs \"call\", \"name\" and \"method\""))
        unknown = sorted(set(map(str, s)) - {"call", "name", "method", "args", "at", "after", "owes"})
        if unknown:
            raise AlarmkitError(f"{name}: step {i}: record does not take {unknown[0]!r}; it takes at, after, call, "
                                "name, method, args, owes")
        at, after = s.get("at"), s.get("after")
        if at is not None and after is not None:
            raise AlarmkitError(f"{name}: step {i} has both at and after; give one")
        given = at if at is not None else after if after is not None else 0
        if not _whole(given, 0, 3_600_000):
            raise AlarmkitError(f"{name}: step {i} {'at' if at is not None else 'after'} must be whole ms in "
                                f"0..3600000, got {clean(repr(given))[:60]}")
        when = at if at is not None else t + given
        t = when
        step = {"at_ms": when, "object": s.get("name"), "method": s.get("method"), "args": s.get("args", [])}
        if "owes" in s:
            step["owes"] = s["owes"]
        steps.append(step)
    return {"steps": steps, "until_ms": drive.get("until", t + 1_000 if steps else None)}


def check_text(report: Any) -> str:
    """``no violation; 3 of 3 obligations done, 0 lost, 0 stuck, 1 duplicated``: a check in words, not a repr."""
    n = report.summary()
    head = "no violation" if report.ok else (f"{n['violations']} violation{'s' * (n['violations'] != 1)} "
                                            f"({n['invariants'].replace(',', ', ')})")
    return (f"{head}; {n['done']} of {n['obligations']} obligations done, {n['lost']} lost, {n['stuck']} stuck, "
            f"{n['duplicates']} duplicated")


def violation_text(v: Any) -> str:
    """``lost · ledger-1 at 1.250 s: ...``: one violation in words."""
    where = f" · {v.object}" if v.object is not None else ""
    when = f" at {v.t_ms / 1000:.3f} s" if isinstance(v.t_ms, (int, float)) else ""
    return f"{v.invariant}{where}{when}: {v.message}"
