"""What each journal event kind counts as: the one classification behind summaries and figures.

The journal keeps each kind as the code that wrote it named it; nothing here changes what is stored.
A reader, though, counts by meaning, and two writers use near-synonyms:

===================  ==========================================================================
class                kinds (who writes them)
===================  ==========================================================================
``armed``            ``arm``, ``proxy_arm`` (the runtime's or the facet proxy's alarm set or moved)
``disarmed``         ``disarm``
``fired``            ``fire`` (the runtime ran ``alarm()``)
``skipped fire``     ``fire_skipped``
``handler ok``       ``handler_ok``
``handler failed``   ``handler_error``
``retry``            ``retry_scheduled``
``abandoned``        ``abandoned``
``revived``          ``revive`` (the runtime re-runs a stored alarm after a construct or restart)
                     and ``revival`` (the guestbook keepalive's fire found owed work)
``effect``           ``effect`` (first run of a (name, key) in the run)
``duplicate effect`` an ``effect`` whose (name, key) already ran on its object in the run (not a journal kind)
``crash``            ``crash``, ``facet_broken``, ``actor_broken``, ``aborted`` (``ctx.abort``)
``fault``            ``fault``
``restart``          ``restart``
``process death``    an ``evict`` whose reason is not ``idle`` (forced or injected; not a journal kind)
``lifecycle``        ``construct``, ``call``, ``evict`` (idle), ``bucket``, ``clock_start`` (a clock from an epoch)
``library schedule`` ``lib_schedule`` (a library's own schedule appeared or moved: ``_library``)
``library ran``      ``lib_ran``
``library failed``   ``lib_failed`` (a recurring one failed and moved on)
``library dropped``  ``lib_dropped`` (the library dropped it after it failed)
``library cancelled`` ``lib_cancelled``
``refused``          ``refused`` (the code touched surface alarmkit does not simulate; caught or not:
                     ``workers._base.journal_refusal``)
===================  ==========================================================================

Every other kind counts under its own name: the keepalive's ``keepalive_arm``/``_disarm``/``_fire``
(its record, written beside the runtime's ``arm``/``fire``, so not counted twice), ``proxy_deliver``,
celld's ``wake``, ``deploy`` (written beside its ``restart``).
"""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

from .._checks import shown, text, time_ms
from ..errors import InvalidValue

DUPLICATE = "duplicate effect"  # not a journal kind: an effect whose (name, key) already ran on its object in the run
DEATH = "process death"  # not a journal kind: an ``evict`` for any reason but idle (forced, injected): work in flight dies

CLASS_OF: dict[str, str] = {
    "arm": "armed", "proxy_arm": "armed", "disarm": "disarmed", "fire": "fired",
    "fire_skipped": "skipped fire",
    "handler_ok": "handler ok",
    "handler_error": "handler failed",
    "retry_scheduled": "retry",
    "abandoned": "abandoned",
    "revive": "revived", "revival": "revived",
    "effect": "effect",
    DUPLICATE: DUPLICATE, DEATH: DEATH,
    "crash": "crash", "facet_broken": "crash", "actor_broken": "crash", "aborted": "crash",
    "fault": "fault",
    "restart": "restart",
    "construct": "lifecycle", "call": "lifecycle", "evict": "lifecycle", "bucket": "lifecycle",
    "clock_start": "lifecycle", "cpu": "lifecycle",
    "lib_schedule": "library schedule", "lib_ran": "library ran", "lib_failed": "library failed",
    "lib_dropped": "library dropped", "lib_cancelled": "library cancelled",
    "refused": "refused",
}

# The kinds alarmkit writes for a library's own schedules (``_library.schedule_rows``, the one builder).
LIBRARY_KINDS = frozenset({"lib_schedule", "lib_ran", "lib_failed", "lib_dropped", "lib_cancelled"})


# The kinds the runtime journals itself. Summaries and checks read them by meaning (a fire is an
# alarm() run, with its retry count), so a custom event (journal_event) may not take these names.
RUNTIME_KINDS = frozenset({
    "arm", "disarm", "fire", "fire_skipped", "handler_ok", "handler_error", "retry_scheduled", "abandoned",
    "revive", "effect", "crash", "facet_broken", "actor_broken", "aborted", "fault", "restart", "construct",
    "call", "evict", "bucket", "clock_start", "wake", "cpu", "refused",
})


def kind_class(kind: str) -> str:
    """The class a kind counts under (see the table above); an unknown kind is its own class."""
    return CLASS_OF.get(kind, kind)


def kinds_of(cls: str) -> list[str]:
    """Every kind (and ``duplicate effect``) that counts as ``cls``."""
    return [k for k, c in CLASS_OF.items() if c == cls] or [cls]


def class_counts(kinds: Iterable[str] | pd.Series) -> dict[str, int]:
    """How many events of each class; ``kinds`` is the drawn kinds (effects split into first runs
    and duplicates, as the timeline draws them)."""
    s = pd.Series(list(kinds) if not isinstance(kinds, pd.Series) else kinds, dtype=object)
    return {str(c): int(n) for c, n in s.map(kind_class).value_counts().items()}


def run_counts(events: pd.DataFrame) -> dict[str, int]:
    """What one run did, each thing counted as what it is (the summary's numbers; the timeline draws the same events).

    - ``runs``: ``fire`` events (alarm() invocations). A run is a *retry* when the last alarm event of its
      object before it (a ``fire``, a ``retry_scheduled`` or a user ``arm``/``disarm``) is a ``retry_scheduled``:
      the platform's backoff scheduled it (workerd ``alarm-scheduler.cc``: a failed handler with no alarm set
      by the user is retried). A counted retry carries ``retry_count > 0``; an uncounted one keeps 0, as on
      workerd, where ``retryCountsAgainstLimit`` false does not advance the count.
    - ``retries_scheduled``: every ``retry_scheduled`` (one drawn backoff arrow each); a user ``set_alarm``
      before the retry's time replaces it, so it may schedule more than run.
    - ``arms``: user ``arm`` events (not a retry's own arm; a facet proxy's ``proxy_arm`` is written beside
      the ``arm`` it makes, so not counted twice), of which ``rearms`` moved an alarm that was set; ``disarms``; ``rungs``: the keepalive's ``keepalive_arm``; ``revivals``: ``revive`` and
      ``revival``; ``crashes``: the crash class; ``failed``: ``handler_error``; ``restarts``;
      ``evictions`` split into ``idle evictions`` (``reason: idle``) and ``process deaths`` (any other reason).
    """
    if events is None or not len(events):
        return {k: 0 for k in _COUNT_KEYS}
    kind = events["kind"].astype(str)
    rc = pd.to_numeric(events["retry_count"], errors="coerce")
    user_arm = (kind == "arm") & rc.isna()  # a facet proxy's proxy_arm is journaled beside the arm it makes
    # the alarm's own history, per object, in journal order: which of these came last before a fire
    keep = kind.isin(["fire", "retry_scheduled", "disarm"]) | user_arm
    sub = events.loc[keep, ["seq", "object_id", "namespace"]].assign(kind=kind[keep])
    sub = sub.sort_values("seq", kind="stable")
    prev = sub.groupby([sub["namespace"].astype(str), sub["object_id"].astype(str)], sort=False)["kind"].shift(1)
    fire_rows = sub.index[(sub["kind"] == "fire").to_numpy()]
    retry = (prev.loc[fire_rows] == "retry_scheduled")
    retry_idx = retry[retry].index
    counted = int((rc.loc[retry_idx].fillna(0) > 0).sum())
    moved = user_arm & events["prev_scheduled_ms"].notna()
    reason = events.loc[kind == "evict", "detail"].astype(str).str.extract(r'"reason":"([^"]*)"')[0]
    idle = int((reason == "idle").sum())
    out = {
        "runs": int((kind == "fire").sum()),
        "retries": int(len(retry_idx)),
        "counted retries": counted,
        "uncounted retries": int(len(retry_idx)) - counted,
        "retries scheduled": int((kind == "retry_scheduled").sum()),
        "ok": int((kind == "handler_ok").sum()),
        "failed": int((kind == "handler_error").sum()),
        "abandoned": int((kind == "abandoned").sum()),
        "skipped": int((kind == "fire_skipped").sum()),
        "arms": int(user_arm.sum()),
        "rearms": int(moved.sum()),
        "disarms": int((kind == "disarm").sum()),
        "rungs": int((kind == "keepalive_arm").sum()),
        "revivals": int(kind.isin(kinds_of("revived")).sum()),
        "crashes": int(kind.isin(kinds_of("crash")).sum()),
        "faults": int((kind == "fault").sum()),
        "restarts": int((kind == "restart").sum()),
        "idle evictions": idle,
        "process deaths": int(len(reason)) - idle,
    }
    out["first runs"] = out["runs"] - out["retries"]
    return out


_COUNT_KEYS = ("runs", "retries", "counted retries", "uncounted retries", "retries scheduled", "ok", "failed",
               "abandoned", "skipped", "arms", "rearms", "disarms", "rungs", "revivals", "crashes", "faults",
               "restarts", "idle evictions", "process deaths", "first runs")


def custom_event(kind: Any, scheduled_ms: Any, prev_ms: Any, retry_count: Any, detail: Any) -> dict | None:
    """Refuse a custom event (``journal_event``) the journal could not hold, or would read as the
    runtime's own; return its detail."""
    text("journal_event(kind)", kind)
    if kind in LIBRARY_KINDS:
        raise InvalidValue(f"journal_event kind {kind!r} is one alarmkit journals for a library's own schedules (the "
                           f"timeline, the report and the verdict read it as the library's); name yours differently, "
                           f"e.g. 'my_{kind}'")
    if kind in RUNTIME_KINDS:
        raise InvalidValue(f"journal_event kind {kind!r} is one the runtime journals itself (summaries and checks "
                           f"read it as the runtime's: {kind!r} rows count as alarm activity); name yours "
                           f"differently, e.g. 'my_{kind}'")
    for what, value in (("scheduled_ms", scheduled_ms), ("prev_ms", prev_ms)):
        if value is not None:
            time_ms(f"journal_event({what}=...)", value)
    if retry_count is not None and (isinstance(retry_count, bool) or not isinstance(retry_count, int)
                                    or not 0 <= retry_count < 2**31):
        raise InvalidValue(f"journal_event(retry_count=...) must be an int in 0..2**31-1 (the journal's INTEGER "
                           f"column) or None, got {shown(retry_count)}")
    if detail is not None and not isinstance(detail, dict):
        raise InvalidValue(f"journal_event(detail=...) must be a dict (stored as JSON) or None, got "
                           f"{type(detail).__name__} {shown(detail)}; wrap it: detail={{'note': ...}}")
    return detail
