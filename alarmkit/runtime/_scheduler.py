"""workerd's alarm scheduler, transcribed.

Source: cloudflare/workerd ``src/workerd/server/alarm-scheduler.{h,c++}`` (the states WAITING /
STARTED / FINISHED, the queued alarm behind a running one, counted and uncounted retries, the
backoff reset, jitter, abandonment) and ``src/workerd/io/actor-sqlite.c++`` (a fire whose
scheduled time no longer matches the object's stored alarm is cancelled, not run).

The durable part is each object's row (the ``_cf_ALARM`` table: one row per object), held on its host
(``Host.alarm_row``) with ``stored`` keeping the order rows were inserted in; everything else (the host's
``Entry``, ``Host.alarm_entry``) is in memory and is lost on ``restart``, which reloads every row (revival).
Per-object state lives in the host's slots, not in dicts keyed by host: a lifecycle reads and writes it
about ten times (benchmarks/bench_instructions.py measured the step, docs/performance.md).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..journal import arm_detail

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host, SimView as Simulation  # views: the simulation builds schedulers

WAITING, STARTED, FINISHED = "waiting", "started", "finished"
# Same-instant delivery (calibration probes same_instant, round3 on workerd 1.20261117.1): 40 alarms due at
# one ms started 2-11 ms late, spread over 2-7 ms, in an order neither arming nor id order, different in
# every run: the scheduler hands them to the isolate one after another, each costing a fraction of a ms.
# Model, under drawn fire latency and a seeded order: an instant's first fire takes its own draw L; the
# instant draws a span S in SAME_INSTANT_SPREAD_MS, so each fire handed over costs c = S / 39 ms; the k-th
# other object to join the instant starts at L + floor(u * (k + 1) * c), u uniform in [0, 1) (seeded, a
# generator of its own: no other draw moves). Forty fires come out spread over S - 1 ms mostly (2-7 ms,
# seeds 0-29: 2 to 7, the real range), in an order neither arming nor id order; two or three fires stay
# in L's ms (c < 1), where the seeded order alone decides, as before this model.
SAME_INSTANT_SPREAD_MS = (3, 8)


class Entry:
    __slots__ = ("host", "at", "status", "queued", "counted", "retry", "backoff", "prev_counted", "timer", "rearmed",
                 "consume", "unfired")

    def __init__(self, host: Host, at: int) -> None:
        self.host = host
        self.retry = 1  # so that reset() sets every counter
        self.reset(at)

    def reset(self, at: int) -> None:
        """The entry afresh for the alarm ``at`` (scheduleAlarm: WAITING, counters at 0): how an entry is made,
        and how the queued alarm reuses its entry. The counters change only with a retry (``retry`` counts every
        one), so after none they are left as they are: the usual re-armed lifecycle sets seven fields, not
        eleven, in a method rather than ``__init__`` again (66,792 -> 66,604 instructions a lifecycle, valgrind, no journal)."""
        self.at = at  # the alarm's scheduledTime (unchanged across its retries)
        self.status = WAITING
        self.queued: int | None = None
        self.timer: list | None = None
        self.rearmed = False  # set_alarm was called while this entry's handler ran
        self.consume = False  # this run consumes an overdue stored alarm (see _fire)
        self.unfired = False  # re-armed inside alarm() at this entry's own time (Profile.rearm_at_now)
        if self.retry:
            self.counted = 0  # countedRetry: what alarm() sees as retry_count
            self.retry = 0  # every retry, counted or not
            self.backoff = 0
            self.prev_counted = False  # alarm-scheduler.h: previousRetryCountedAgainstLimit = false


class WorkerdScheduler:
    """One alarm per object; at-least-once delivery with bounded, jittered retries (an ``AlarmBackend``)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.kernel = sim.kernel
        self.profile = sim.profile
        # the hosts with a row, in the order their rows were inserted (reload revives them in it); the row
        # itself is host.alarm_row (durable: survives restart), the in-memory entry host.alarm_entry
        self.stored: dict[Host, None] = {}
        self._fire_latency = sim.faults.fire_latency
        self._latency = sim.profile.fire_latency
        # a fixed latency and no latency fault: a constant, no call per fire
        self._late = self._latency.ms if self._latency.kind == "fixed" and not sim.fault_hooks else None
        # fire lateness (the profile's or a fault plan's) is drawn from a generator of its own, seeded from the
        # run's seed: the measured default moves fire times and nothing else (the retry jitter and the random
        # numbers user code draws from the kernel's source are the same under every fire latency)
        self._late_rng = random.Random(f"fire-latency:{sim.seed}")
        # draw(host): a fault plan's latency through the faults, else the profile's own cheap drawer
        self._draw = ((lambda host: self._fire_latency(host, self._latency, self._late_rng)) if sim.fault_hooks
                      else self._latency.drawer(self._late_rng))
        self._fire_cb, self._finished_cb = self._fire, self._finished  # bound once, not per timer and fire
        # Profile.same_instant_order "seeded": each fire timer's place among the timers of its instant is drawn
        # from a generator of its own (seeded from the run's seed, so the jitter and latency draws are unmoved)
        self._order = random.Random(f"same-instant:{sim.seed}") if sim.profile.same_instant_order == "seeded" else None
        # the instants with a fire timer: due -> [first fire's latency, spread, its object] (see SAME_INSTANT_SPREAD_MS);
        # only where latency is drawn (a fixed latency, "exact", keeps every fire at its round number)
        self._instants: dict[int, list] | None = {} if self._order is not None and self._late is None else None
        self._spread_rng = random.Random(f"same-instant-spread:{sim.seed}")

    # -- what user code sees ------------------------------------------------------------
    def get(self, host: Host) -> int | None:
        """What ``get_alarm()`` returns: the object's stored alarm (actor-sqlite reads its own
        metadata, not the scheduler), hidden while ``alarm()`` runs unless set since it started."""
        entry = host.alarm_entry
        # Observed on workerd 2026-11-17 (calibration probe wake_evicted): when an alarm wakes an
        # evicted object, its constructor runs before alarm() and its getAlarm() "shows the stored
        # time"; only alarm() itself sees null. So the constructor reads the row, not the hiding.
        if entry is not None and entry.status == STARTED:
            if host.current_cause() != "constructor":  # the one cause rule (Host.current_cause)
                return entry.queued if entry.rearmed else None
        return host.alarm_row

    def arm(self, host: Host, at: int, cause: str) -> None:
        """A committed ``set_alarm``: upsert the row, then (re)schedule or queue."""
        prev = host.alarm_row
        host.alarm_row = at
        if prev is None:
            self.stored[host] = None
        entry = host.alarm_entry
        in_alarm = entry is not None and entry.status == STARTED and cause == "user"  # a re-arm from alarm()
        self.sim.log("arm", host, at, prev, None, arm_detail(prev, at, cause, in_alarm))
        if entry is None:
            host.alarm_entry = self._schedule(host, at)
        elif entry.status != WAITING:
            # "We queue any new alarm after the existing alarm even if the new alarm has the same
            # scheduled time" (alarm-scheduler.c++ setAlarm); FINISHED means a retry is pending
            entry.queued = at
            entry.rearmed = entry.status == STARTED
            entry.unfired = entry.rearmed and at == entry.at and self.profile.rearm_at_now != "fires"
        else:
            self.kernel.cancel(entry.timer)
            host.alarm_entry = self._schedule(host, at)

    def disarm(self, host: Host, cause: str) -> None:
        prev = self._drop_row(host)
        if prev is not None:
            self.sim.log("disarm", host, None, prev, None, {"cause": cause})
        entry = host.alarm_entry
        if entry is None:
            return
        if entry.queued is not None:
            if entry.status == STARTED:
                entry.queued = None  # delete the queued alarm, not the running one
            else:
                self.kernel.cancel(entry.timer)
                host.alarm_entry = self._schedule(host, entry.queued)
        elif entry.status != STARTED:  # "We can't remove running alarms."
            self.kernel.cancel(entry.timer)
            host.alarm_entry = None

    def _drop_row(self, host: Host) -> int | None:
        """Delete ``host``'s row; returns the time it held (None: there was none)."""
        prev = host.alarm_row
        if prev is not None:
            host.alarm_row = None
            del self.stored[host]
        return prev

    def forget(self, host: Host) -> int | None:
        """The alarm manager loses ``host``'s pending alarm while its stored time stays (the fault
        ``forgotten_alarms``): nothing fires until code sets the alarm again or the runtime restarts.
        Returns the stored time, or None when there was nothing to lose (no alarm, or alarm() running)."""
        entry = host.alarm_entry
        if entry is None or entry.status == STARTED:
            return None
        self.kernel.cancel(entry.timer)
        host.alarm_entry = None
        return host.alarm_row

    # -- restart ------------------------------------------------------------------------
    def shutdown(self) -> None:
        for host in self.sim.hosts():
            if host.alarm_backend is self and host.alarm_entry is not None:
                self.kernel.cancel(host.alarm_entry.timer)
                host.alarm_entry = None

    def reload(self) -> None:
        """loadAlarmsFromDb: every stored alarm is armed again with fresh counters."""
        for host in self.stored:
            at = host.alarm_row
            self.sim.log("arm", host, at, None, None, {"direction": "new", "cause": "reload"})
            self.sim.log("revive", host, at, None, None, {"cause": "restart", "overdue_ms": max(0, self.kernel.now - at)})
            host.alarm_entry = self._schedule(host, at)

    # -- firing -------------------------------------------------------------------------
    def _schedule(self, host: Host, at: int) -> Entry:
        entry = Entry(host, at)
        self._arm_timer(entry, max(at, self.kernel.now))
        return entry

    def _arm_timer(self, entry: Entry, due: int) -> None:
        # checkTimestamp: never fire before the scheduled time; then the delivery latency
        late = self._late if self._late is not None else self._draw(entry.host)
        if self._instants is not None:
            late = self._same_instant(entry, due, late)
        entry.timer = self.kernel.call_ranked(due + late, self._order, self._fire_cb, entry)

    def _same_instant(self, entry: Entry, due: int, late: int) -> int:
        """The latency of ``entry``'s fire due at ``due`` (see SAME_INSTANT_SPREAD_MS): its own draw for the
        instant's first object (or when that object's alarm is set there again), else the instant's first
        latency plus the delivery cost of the fires handed over before it."""
        instants = self._instants
        group = instants.get(due)
        rng = self._spread_rng
        if group is None:
            if len(instants) > 256:  # instants long past no longer gather fires
                now = self.kernel.now
                for old in [t for t in instants if t < now]:
                    del instants[old]
            # [first's latency, per-fire cost (ms), objects joined, first object]
            instants[due] = [late, rng.randint(*SAME_INSTANT_SPREAD_MS) / 39, 0, entry.host]
            return late
        first, cost, joined, first_host = group
        if entry.host is first_host:
            return late
        group[2] = joined = joined + 1
        return first + int(rng.random() * (joined + 1) * cost)

    def _fire(self, entry: Entry) -> None:
        host = entry.host
        entry.timer = None
        entry.status = STARTED
        entry.rearmed = False
        stored = host.alarm_row
        entry.consume = False
        if stored != entry.at:
            # actor-sqlite armAlarmHandler, when the object's stored alarm differs from this run's:
            # if the stored alarm is already due, "running despite AlarmManager mismatch" (and success
            # deletes it); otherwise the run is cancelled and the stored alarm (if any) runs later
            if stored is None or stored > self.kernel.now:
                self.sim.log("fire_skipped", host, entry.at, stored, entry.counted, {"reason": "stored alarm changed"})
                self._finished(entry, True, False)
                return
            entry.consume = True
        self.sim.deliver(host, entry.at, entry.counted, self._finished_cb, entry)

    def _finished(self, entry: Entry, ok: bool, counted: bool, retry: bool = True) -> None:
        host = entry.host
        if host.alarm_entry is not entry:
            return  # the runtime restarted while the handler ran
        if ok and entry.consume and not entry.rearmed:
            # the deferred delete of a run that consumed an overdue stored alarm clears what was queued
            entry.queued = None
        if ok and entry.unfired and entry.queued is not None:
            # Profile.rearm_at_now == "same-time-unfired" (workerd issue 6866): the alarm re-armed inside
            # the handler at the running alarm's own scheduled time stays stored and is never delivered
            host.alarm_entry = None
            return
        if entry.queued is not None:
            # "If an alarm is queued, there's no point in retrying the current one": the queued
            # alarm starts afresh (scheduleAlarm: WAITING, counters at 0); the entry is reused
            at = entry.queued
            entry.reset(at)
            # _arm_timer(), inlined: most lifecycles end here, re-armed by alarm() (with the watchdog's
            # two inlines, 62,846 -> 61,775 instructions a lifecycle, valgrind, no journal)
            now = self.kernel.now
            late = self._late if self._late is not None else self._draw(host)
            due = at if at > now else now
            if self._instants is not None:
                late = self._same_instant(entry, due, late)
            entry.timer = self.kernel.call_ranked(due + late, self._order, self._fire_cb, entry)
            return
        entry.status = FINISHED
        if ok or not retry:  # not retry: ctx.abort(retry_alarm=False) in alarm() clears the alarm as a success does
            self._drop_row(host)
            host.alarm_entry = None
            if ok:
                self.sim.faults.after_success(host, entry.at)
            return
        if entry.counted >= self.profile.retry_max_tries:
            self._drop_row(host)
            host.alarm_entry = None
            self.sim.log("abandoned", host, None, entry.at, entry.counted, {"attempts": entry.retry + 1})
            return
        if counted:
            entry.counted += 1
            if not entry.prev_counted:
                entry.backoff = 0
        entry.prev_counted = counted
        entry.backoff = min(self.profile.backoff_max_shift, entry.backoff)
        base = self.profile.retry_delay_ms(entry.backoff)
        jitter = self.kernel.rng.randint(0, self.profile.max_jitter_ms(base))
        rung = entry.backoff
        entry.backoff += 1
        entry.retry += 1
        due = self.kernel.now + base + jitter
        if due <= self.kernel.end_ms:  # past the clock's end (2**53 in a Simulation) the journal holds no time: the run stops there, naming this retry
            self.sim.log("arm", host, due, entry.at, entry.counted, arm_detail(entry.at, due, "retry"))
            self.sim.log(
                "retry_scheduled", host, due, entry.at, entry.counted,
                {"rung": rung, "base_ms": base, "jitter_ms": jitter, "delay_ms": base + jitter, "counted": counted},
            )
        self._arm_timer(entry, due)

