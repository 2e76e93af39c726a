"""celld's alarm scheduler (denoland/celld v0.3.0, snapshot 2026-08-20), and the ``celld`` profile.

Source facts: ``crates/logic/alarm.rs`` (retry ``BACKOFF_BASE_MS << min(n,
MAX_BACKOFF_SHIFT)`` with n the total retry count, no jitter, ``RETRY_CEILING = 6`` counted
retries, then the row is deleted; ``setAlarm`` resets both counters and draws a new generation; a
successful finish deletes the row only if ``at_ms`` and generation are unchanged; ``getAlarm`` is
hidden during the handler) and ``crates/logic/wake.rs`` (two tiers: resident cells use
millisecond timers; dormant cells are woken through minute buckets ``wake/<YYYY-MM-DDTHH:MM>/<cell>``
scanned every ``CELLD_WAKER_TICK_MS``; an entry at the same or an earlier minute covers a new arm;
a moved entry is written before the old one is deleted; a stale entry costs one spurious wake).

Modelling choices (not quoted): a cell is resident while its instance is alive, and alarmkit's
idle eviction plays ``CELLD_ALARM_RESIDENT_MS`` (``Profile.resident_ms``); the waker ticks at
multiples of ``waker_tick_ms`` of virtual time (only while some bucket entry exists, so a run
ends); a bucket is due from the start of its minute; a wake loads the cell (its constructor runs)
and, if the alarm's minute has come, fires it at ``max(at, now)``, else moves the entry to the
alarm's minute (the spurious wake) and leaves the now-resident cell's timer to fire it; if the
handler re-armed and then failed, the new arm wins (as on success).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..journal import direction
from ..errors import AlarmkitError

if TYPE_CHECKING:  # pragma: no cover
    from ._types import HostView as Host, SimView as Simulation  # views: no import of what builds this

__all__ = ["CelldScheduler", "MINUTE_MS", "set_residency", "wake_key"]

MINUTE_MS = 60_000
_EPOCH = datetime(1970, 1, 1)


def wake_key(minute: int, cell: str) -> str:
    """``wake/<YYYY-MM-DDTHH:MM>/<cell>`` for the minute ``minute`` (virtual ms 0 is the Unix epoch)."""
    return f"wake/{(_EPOCH + timedelta(minutes=minute)).strftime('%Y-%m-%dT%H:%M')}/{cell}"


class _Row:
    """One ``_cf_ALARM`` row: ``(scope PK, at_ms, retry, counted_retry, generation)``."""

    __slots__ = ("at", "retry", "counted", "gen")

    def __init__(self, at: int, gen: int) -> None:
        self.at = at
        self.retry = 0
        self.counted = 0
        self.gen = gen


class CelldScheduler:
    """Rows and wake entries are durable; timers, the firing set and the waker tick are not (an ``AlarmBackend``).

    A cell stays resident for ``resident_ms`` after its last event; the profile makes that the
    idle eviction time (``Profile``), so this scheduler reads the profile and never changes it."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.kernel = sim.kernel
        self.profile = sim.profile
        self.rows: dict[Host, _Row] = {}
        self.wake: dict[Host, set[int]] = {}  # the wake/<minute>/<cell> keys, by cell
        self.timers: dict[Host, list] = {}
        self.firing: dict[Host, int] = {}  # cell -> generation of the running fire
        self.tick: list | None = None
        self.epoch = 0  # bumped by shutdown: fires that began before a restart settle nothing
        self._gen = 0
        self._finished_cb = self._finished  # bound once, not per fire
        self._late_rng = random.Random(f"fire-latency:{sim.seed}")  # as the workerd scheduler: its own stream

    # -- what user code sees ----------------------------------------------------------------------
    def get(self, host: Host) -> int | None:
        row = self.rows.get(host)
        if row is None or self.firing.get(host) == row.gen:
            return None  # hidden during the handler unless set_alarm drew a new generation
        return row.at

    def arm(self, host: Host, at: int, cause: str) -> None:
        old = self.rows.get(host)
        self._gen += 1
        self.rows[host] = _Row(at, self._gen)  # both counters reset, a new generation
        self.sim.log("arm", host, at, old.at if old else None, None,
                     {"direction": direction(old.at if old else None, at), "cause": cause, "gen": self._gen})
        self._cover(host, at)
        if host not in self.firing:
            self._arm_timer(host)

    def disarm(self, host: Host, cause: str) -> None:
        row = self.rows.pop(host, None)
        if row is not None:
            self.sim.log("disarm", host, None, row.at, None, {"cause": cause})
        self.kernel.cancel(self.timers.pop(host, None))
        if host not in self.firing:
            self._uncover(host)

    # -- restart --------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        self.epoch += 1
        for handle in self.timers.values():
            self.kernel.cancel(handle)
        self.timers.clear()
        self.firing.clear()
        self.kernel.cancel(self.tick)
        self.tick = None

    def reload(self) -> None:
        """No cell is resident after a restart: every stored alarm waits for the waker."""
        for host, row in self.rows.items():
            self.sim.log("arm", host, row.at, None, row.counted, {"direction": "new", "cause": "reload"})
            self.sim.log("revive", host, row.at, None, row.counted,
                         {"cause": "restart", "overdue_ms": max(0, self.kernel.now - row.at)})
            self._cover(host, row.at)  # RestoredAlarm: a row without a covering entry writes one
        self._ensure_tick()

    # -- the resident tier: millisecond timers -----------------------------------------------------------
    def _arm_timer(self, host: Host, woken: bool = False) -> None:
        self.kernel.cancel(self.timers.pop(host, None))
        row = self.rows.get(host)
        if row is None or (host.instance is None and not woken):
            return  # dormant: its wake entry covers it
        late = self.sim.faults.fire_latency(host, self.profile.fire_latency, self._late_rng)
        self.timers[host] = self.kernel.call_at(max(row.at, self.kernel.now) + late, self._timer, host, row.gen, woken)

    def _timer(self, host: Host, gen: int, woken: bool) -> None:
        self.timers.pop(host, None)
        row = self.rows.get(host)
        if row is None or row.gen != gen or host in self.firing:
            return
        if host.instance is None and not woken:
            return  # the cell went dormant after arming: its timer went with it; the bucket covers
        self.firing[host] = gen
        self.sim.deliver(host, row.at, row.counted, self._finished_cb, (host, self.epoch, gen, row.at))

    def _finished(self, fire: tuple, ok: bool, counted: bool, retry: bool = True) -> None:
        host, epoch, gen, at = fire
        if epoch != self.epoch:
            return  # the runtime restarted while the handler ran: the row is reloaded as it was
        self.firing.pop(host, None)
        row = self.rows.get(host)
        if row is None:
            self._uncover(host)  # deleted during the handler
            return
        if row.gen != gen:
            self._arm_timer(host)  # re-armed during the handler: the new arm wins
            return
        if ok or not retry:  # not retry: ctx.abort(retry_alarm=False), as workerd (modelled, not measured on celld)
            del self.rows[host]  # at_ms and generation unchanged: the alarm is consumed
            self._uncover(host)
            if ok:
                self.sim.faults.after_success(host, at)
            return
        prof = self.profile
        if counted and row.counted >= prof.retry_max_tries:
            del self.rows[host]
            self._uncover(host)
            self.sim.log("abandoned", host, None, row.at, row.counted, {"attempts": row.retry + 1})
            return
        shift = min(row.retry, prof.backoff_max_shift)  # the total retry count, counted or not
        delay = prof.retry_delay_ms(shift)
        row.retry += 1
        if counted:
            row.counted += 1
        prev, row.at = row.at, self.kernel.now + delay
        if row.at <= self.kernel.end_ms:  # past the clock's end (2**53 in a Simulation) the journal holds no time: the run stops there, naming this retry
            self.sim.log("arm", host, row.at, prev, row.counted, {"direction": direction(prev, row.at), "cause": "retry"})
            self.sim.log("retry_scheduled", host, row.at, prev, row.counted,
                         {"rung": shift, "base_ms": delay, "jitter_ms": 0, "delay_ms": delay, "counted": counted})
        self._cover(host, row.at)
        self._arm_timer(host)

    # -- the dormant tier: minute buckets and the waker --------------------------------------------------
    def _cover(self, host: Host, at: int) -> None:
        minute = at // MINUTE_MS
        entries = self.wake.setdefault(host, set())
        if any(m <= minute for m in entries):
            return  # an entry at the same or an earlier minute covers the arm
        self._write(host, minute)  # the new entry first...
        for m in sorted(entries - {minute}):
            self._delete(host, m)  # ...then the old ones: a crash in between costs a spurious wake, not a lost one
        self._ensure_tick()

    def _uncover(self, host: Host) -> None:
        for m in sorted(self.wake.get(host, ())):
            self._delete(host, m)
        self.wake.pop(host, None)

    def _write(self, host: Host, minute: int) -> None:
        self.wake.setdefault(host, set()).add(minute)
        self.sim.log("bucket", host, minute * MINUTE_MS, None, None, {"op": "write", "key": wake_key(minute, host.label)})

    def _delete(self, host: Host, minute: int) -> None:
        self.wake[host].discard(minute)
        self.sim.log("bucket", host, minute * MINUTE_MS, None, None, {"op": "delete", "key": wake_key(minute, host.label)})

    def _ensure_tick(self) -> None:
        if self.tick is not None or self.sim.down:
            return
        minutes = [m for ms in self.wake.values() for m in ms]
        if minutes:
            # the waker ticks at every multiple of waker_tick_ms; ticks before the earliest entry
            # would find nothing due, so the next one that can is scheduled directly
            step = self.profile.waker_tick_ms
            first = max(self.kernel.now + 1, min(minutes) * MINUTE_MS)
            self.tick = self.kernel.call_at(-(-first // step) * step, self._tick)

    def _tick(self) -> None:
        self.tick = None
        now = self.kernel.now
        due = sorted((m, host.label, host) for host, ms in self.wake.items() for m in ms if m * MINUTE_MS <= now)
        try:
            for minute, _, host in due:
                if minute in self.wake.get(host, ()):
                    self._wake(host, minute)
        finally:  # a KeyboardInterrupt in a constructor a wake ran must not stop the waker for good
            self._ensure_tick()

    def _wake(self, host: Host, minute: int) -> None:
        key = wake_key(minute, host.label)
        if self.rows.get(host) is None:
            self.sim.log("wake", host, None, None, None, {"key": key, "spurious": True, "reason": "no alarm"})
            self._delete(host, minute)
            return
        if host in self.firing or (host.instance is not None and host in self.timers):
            return  # running, or resident with its timer set: the entry is insurance until the fire settles
        self._load(host)
        row = self.rows.get(host)
        if row is None:
            return  # its constructor deleted the alarm (and the entries with it)
        row_minute = row.at // MINUTE_MS
        if row_minute > self.kernel.now // MINUTE_MS:
            # a stale entry (the alarm moved later): one spurious wake; the entry moves to the alarm's minute
            self.sim.log("wake", host, row.at, None, None,
                         {"key": key, "spurious": True, "reason": "alarm is in a later minute"})
            if row_minute not in self.wake.get(host, ()):
                self._write(host, row_minute)
            self._delete(host, minute)
            self._arm_timer(host)  # resident now: its millisecond timer runs while it stays resident
            return
        self.sim.log("wake", host, row.at, None, None, {"key": key, "spurious": False, "due_in_ms": row.at - self.kernel.now})
        self._arm_timer(host, woken=True)

    def _load(self, host: Host) -> None:
        """A wake loads the cell: it is resident (its constructor runs) until resident_ms of idleness."""
        if host.instance is None:
            try:
                host.ensure_live()
            except Exception:  # noqa: BLE001 - the delivery runs the constructor again and reports its error
                pass

    # -- inspection ------------------------------------------------------------------------------------
    def wake_keys(self) -> list[str]:
        return sorted(wake_key(m, h.label) for h, ms in self.wake.items() for m in ms)


def set_residency(sim: Simulation, resident_ms: int) -> None:
    """Make a celld simulation's cells go dormant after ``resident_ms`` idle (before any object runs)."""
    if not isinstance(sim.scheduler, CelldScheduler):
        raise AlarmkitError(f"resident_ms is a celld setting; profile {sim.profile.name!r} does not use the celld scheduler")
    if isinstance(resident_ms, bool) or not isinstance(resident_ms, int) or resident_ms <= 0:
        raise AlarmkitError(f"resident_ms must be a positive int of ms, got {resident_ms!r}")
    sim.configure(resident_ms=resident_ms)
