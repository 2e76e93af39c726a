"""What the command line prints for a run and for ``list``: plain words, never Python reprs (``alarmkit/cli.py``
runs the commands; this module only writes their text)."""

from __future__ import annotations

import json
from typing import Any

from ._text import one_line

__all__ = ["one_line", "readable", "attempt_line", "plain", "list_lines", "list_json"]

SHOW_ATTEMPTS = 30  # alarm() attempts `alarmkit run` lists before it elides the middle



def readable(r: dict, db: str | None = None) -> str:
    where = f"run {r['run_id']} in {db}" if r.get("run_id") is not None else "not journaled: --db FILE keeps it"
    lines = [f"{r['scenario']} (profile {r['profile']}, seed {r['seed']}, {where}): {r['events']} events"]
    attempts = r["attempts"]
    shown = attempts if len(attempts) <= SHOW_ATTEMPTS else attempts[:SHOW_ATTEMPTS - 5]
    for a in shown:
        lines.append(attempt_line(a))
    if len(shown) < len(attempts):  # a run of days prints a screen, not 20,000 lines; --json has them all
        lines.append(f"  ... {len(attempts) - len(shown) - 5:,} more alarm() attempts (--json lists every one) ...")
        for a in attempts[-5:]:
            lines.append(attempt_line(a))
    if not r["attempts"]:
        lines.append("  alarm() never ran")
    eff = ", ".join(f"{k} x{v}" for k, v in r["effects"].items()) or "none"
    lines.append(f"  effects: {eff}")
    if "final_alarm" in r:
        lines.append(f"  final alarm: {plain(r['final_alarm'])}")
    if "rows_left" in r:
        lines.append(f"  rows left: {plain(r['rows_left'])}")
    lines.extend(r.get("report", []))  # a scenario's own readable lines (the guestbook scenarios have some)
    return "\n".join(lines)


def plain(value: Any) -> str:
    """A value as a reader writes it, not as Python's repr: ``none``, ``lease-0, lease-1``, ``15000``."""
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {plain(v)}" for k, v in value.items())
    return str(value)


def attempt_line(a: dict) -> str:
    from .scenarios.registry import attempt_text

    return one_line(f"  alarm() at {a['t_ms'] / 1000:>9.3f} s  retry_count={a['retry_count']}  {a['object_id']}  "
                    f"{attempt_text(a)}")[:300]


def list_json(items: list) -> str:
    return json.dumps([{"name": s.name, "description": s.description, "demonstrates": s.demonstrates,
                        "kind": s.kind, "profile": s.profile, "params": s.params,
                        "faults": s.faults} for s in items], default=str)  # faults: the default plan, or null


def list_lines(items: list) -> list[str]:
    """The name and ``[kind]`` what it demonstrates, then (indented) what it does; then the kinds explained."""
    width = max(len(s.name) for s in items)
    out = []
    for s in items:
        kind = f"[{s.kind}] " if s.kind else ""
        out.append(f"{s.name:<{width}}  {kind}{s.demonstrates}")
        if s.description != s.demonstrates:
            out.append(f"{'':<{width}}    {s.description}")
    out.append(f"\nkinds: correct (the pattern to copy), platform (how the platform behaves), failure (broken by "
               "design: the verdict says why), anti-pattern (breaks only under faults: `alarmkit explore NAME` finds it)")
    return out
