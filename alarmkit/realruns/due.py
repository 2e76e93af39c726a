"""A recording's obligations, each due where the object's own clock read it.

A step's ``owes`` becomes an obligation only when its call succeeded (``record`` reports the failed
ones as ``call_failed``). ``after_ms`` counts from the recorder's ``call`` line for that call: the
object's ``Date.now()`` just before the method ran (the k-th step to an (object, method) pair is
matched to the k-th such line at or after the entry worker's ``before``; calls are made one after
another, so they come in step order). Without a matching line (an object not wrapped by
``recorded.js``) the entry worker's ``before`` is used and ``due_from`` says so. ``"due":
"returned"`` takes the value the call returned; a value that is not epoch ms is kept on the call
as ``due_error`` (reported ``due_unreadable``), never raised: the recording has already run.
"""

from __future__ import annotations

from .._text import clean

__all__ = ["obligations"]


def obligations(calls: list[dict], rows: list[tuple]) -> tuple[list[dict], list[str]]:
    """Each successful call's obligation, due where the object's clock read it (its ``call`` line)."""
    lines: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r[4] == "call" and isinstance(r[8], dict) and r[8].get("method") != "getAlarm":
            lines.setdefault((r[3], r[8].get("method")), []).append(r[1])
    used: dict[tuple[str, str], int] = {}
    obligations, due_from = [], []
    for c in calls:
        step, res = c["step"], c["result"]
        key = (step["object"], step["method"])
        times = lines.get(key, [])
        before = res.get("before") if isinstance(res.get("before"), int) else None
        k = used.get(key, 0)  # steps are made one after another, so their call lines come in step order
        while k < len(times) and before is not None and times[k] < before:
            k += 1
        t_obj = times[k] if k < len(times) else None
        used[key] = k + 1 if t_obj is not None else k
        owes = step.get("owes")
        if not owes or not res.get("ok"):
            continue
        if owes.get("due") == "returned":
            value = res.get("value")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10**15:
                # said, never raised: raising here would lose the recording that has just run
                c["due_error"] = (f"owes a due time \"returned\" by {step['method']}(), which returned "
                                  f"{clean(repr(value))[:40]}, not epoch ms; its obligation could not be checked")
                continue
            due, src = int(value), "returned"
        elif t_obj is not None:
            due, src = t_obj + int(owes.get("after_ms", 0)), "object clock"
        else:
            due, src = int(before or res.get("now") or 0) + int(owes.get("after_ms", 0)), "entry worker"
        ob = {"object": step["object"], "effect": owes["effect"], "key": owes["key"], "due_ms": due,
              "since_ms": t_obj if t_obj is not None else before}
        if owes.get("max_late_ms") is not None:
            ob["max_late_ms"] = owes["max_late_ms"]
        obligations.append(ob)
        due_from.append(src)
    return obligations, due_from
