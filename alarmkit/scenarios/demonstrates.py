"""What each built-in scenario demonstrates, in one line, and what kind of story it is.

``kind`` says what a reader should expect of its verdict:

* ``correct``: the pattern to copy; its verdict should hold.
* ``platform``: how the platform behaves (retries, abandonment, revival, lateness); a verdict may hold
  with warnings (an abandoned alarm is named, never drawn green).
* ``failure``: a bug that shows in the plain run: its verdict is BROKEN by design, and says why.
* ``anti-pattern``: a bug that shows only under faults (a crash at the wrong await, a restart): the plain
  run holds, so its page says so and shows the counterexample ``alarmkit explore NAME`` finds.

``alarmkit list`` prints the line under each name; every report of ``alarmkit demo`` shows it first.
"""

from __future__ import annotations

__all__ = ["DEMONSTRATES", "KINDS"]

KINDS = ("correct", "platform", "failure", "anti-pattern")

DEMONSTRATES: dict[str, tuple[str, str]] = {
    "lease-normal": ("correct", "one alarm serves many leases: arm for the earliest expiry, revoke what is due, re-arm for the next"),
    "lease-crash-after-effect": ("platform", "delivery is at least once: a retry runs an effect again, so effects must be idempotent"),
    "lease-moves-only-earlier": ("correct", "set the alarm only when the new due time is earlier than the stored one"),
    "lease-exhaustion": ("platform", "a handler that always throws is retried 6 times with backoff, then abandoned: its lease is never revoked"),
    "lease-revival": ("correct", "after an abandoned alarm, a constructor that re-arms from storage brings the work back"),
    "lease-lab": ("platform", "every lab control at once (failing revokes, a failing handler, a restart) for the notebooks"),
    "lease-ledger": ("correct", "the correct ledger: no fault plan explore tries loses a revoke"),
    "lease-alarm-as-data": ("failure", "an object has one alarm: each set_alarm per lease replaces the last, and leases are lost"),
    "lease-ctor-pushes-later": ("anti-pattern", "a constructor that sets the alarm unconditionally pushes a due alarm later after every wake"),
    "lease-delete-before-effect": ("anti-pattern", "deleting the row before the effect loses the effect when the handler dies in between"),
    "lease-reads-clock": ("anti-pattern", "a handler that trusts its firing instead of checking expire_at <= now revokes a valid lease when a run repeats"),
    "lease-getalarm-in-handler": ("failure", "inside alarm() get_alarm() is null: a re-arm decided on it is decided on nothing"),
    "lease-no-revival": ("anti-pattern", "relying on retries alone: once the platform abandons the alarm, nothing re-arms it"),
    "guestbook-root": ("correct", "a keepalive alarm revives a batch whose process died mid-way"),
    "guestbook-facet": ("failure", "a facet that calls set_alarm breaks (or, before PR #7085, breaks its whole actor)"),
    "guestbook-facet-proxy": ("correct", "a parent-owned alarm proxy gives a facet a working keepalive"),
    "guestbook-crash-loop": ("correct", "a crash-loop budget parks a keepalive that keeps reviving a poison entry, until a deploy"),
    "keepalive-celld-vs-workerd": ("platform", "celld's minute buckets fire a dormant cell's alarm up to ~50 s late; workerd a few ms"),
    "prod-clobbered-alarm": ("failure", "two modules sharing the one alarm clobber each other; a schedule table loses nothing"),
    "prod-set-early-throw-later": ("failure", "setting the next alarm before a throw replaces the retry: that period's work is lost"),
    "prod-stale-overdue-alarm": ("failure", "'arm only if none is set' stalls behind an overdue alarm the manager lost"),
    "prod-runaway-internal-errors": ("failure", "uncounted internal errors retry forever, every ~17-21 min; counted ones stop after 7"),
    "prod-rearm-at-now": ("failure", "set_alarm(now) inside alarm() never fires on local workerd (issue 6866); now + 1 does"),
    "prod-cold-wake-name": ("failure", "ctx.id.name is missing in an instance an alarm woke cold: store the name on first request"),
    "order-handoff": ("failure", "two alarms due at one instant run in no promised order: a consumer that assumes one fails"),
}
