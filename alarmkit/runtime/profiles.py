"""Runtime profiles: the constants and behaviours of each real runtime alarmkit imitates.

Every constant that comes from a source names it (a file of workerd's or celld's source, a probe
of ``alarmkit calibrate``); docs/runtime.md and docs/calibration.md say which probe backs which.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

from .._checks import MAX_MS, text, time_ms
from ..errors import AlarmkitError, InvalidValue

__all__ = ["Latency", "NAMED_LATENCIES", "Profile", "PROFILES", "get_profile"]


@dataclass(frozen=True)
class Latency:
    """How late a fire is delivered after its scheduled time, in ms (never early).

    ``fixed``: always ``ms``. ``uniform``: uniform integer in ``[lo, hi]``. ``failover``: like
    ``uniform`` but with probability ``p`` a fire is late by up to ``max_ms`` (the documented
    "can be delayed by up to a minute due to maintenance or failures while failover takes
    place", Cloudflare Durable Objects storage API docs). ``empirical``: one of ``values``, each
    equally likely (a measured sample replayed, seeded by the simulation's seed).

    Named values (``from_value``): ``"measured"`` (300 fires of local workerd on a quiet machine: the
    ``workerd`` profile's default), ``"measured-loaded"`` (300 fires under load) and ``"exact"`` (2 ms,
    always: round numbers for teaching); an int is a fixed lateness.
    """

    kind: str = "fixed"
    ms: int = 2
    lo: int = 0
    hi: int = 0
    p: float = 0.0
    max_ms: int = 60_000
    values: tuple = ()

    @classmethod
    def empirical(cls, values) -> Latency:
        vals = tuple(values) if isinstance(values, (list, tuple)) else None
        if not vals:
            raise AlarmkitError(f"empirical latency needs a non-empty list of ms values, got {values!r}")
        return cls("empirical", values=tuple(_nonneg("values[]", v) for v in vals))

    @classmethod
    def measured(cls, loaded: bool = False) -> Latency:
        """Fire lateness drawn from 300 fires recorded on real workerd 1.20261117.1: on a quiet machine
        (``QUIET_LATENESS_MS``, the ``workerd`` profile's default) or, with ``loaded=True``, under load
        (``LOADED_LATENESS_MS``)."""
        return cls.empirical(LOADED_LATENESS_MS if loaded else QUIET_LATENESS_MS)

    def most_ms(self) -> int:
        """The latest this latency can make a fire, in ms."""
        return {"fixed": self.ms, "uniform": self.hi, "failover": max(self.hi, self.max_ms),
                "empirical": max(self.values, default=0)}.get(self.kind, self.ms)

    @classmethod
    def fixed(cls, ms: int) -> Latency:
        return cls("fixed", ms=_nonneg("ms", ms))

    @classmethod
    def uniform(cls, lo: int, hi: int) -> Latency:
        if _nonneg("hi", hi) < _nonneg("lo", lo):
            raise AlarmkitError(f"uniform latency needs lo <= hi, got lo={lo}, hi={hi}")
        return cls("uniform", lo=lo, hi=hi)

    @classmethod
    def failover(cls, p: float = 0.01, max_ms: int = 60_000, lo: int = 1, hi: int = 5) -> Latency:
        if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
            raise AlarmkitError(f"failover probability must be within [0, 1], got {p!r}")
        return cls("failover", lo=_nonneg("lo", lo), hi=_nonneg("hi", hi), p=float(p), max_ms=_nonneg("max_ms", max_ms))

    def sample(self, rng) -> int:
        if self.kind == "fixed":
            return self.ms
        if self.kind == "uniform":
            return rng.randint(self.lo, self.hi)
        if self.kind == "empirical":
            return self.values[rng.randrange(len(self.values))]
        if self.kind == "failover":
            if rng.random() < self.p:
                return rng.randint(self.hi, self.max_ms)
            return rng.randint(self.lo, self.hi)
        raise AlarmkitError(f"unknown latency kind {self.kind!r}; use fixed, uniform, failover or empirical")

    def drawer(self, rng) -> Callable[[Any], int]:
        """``draw(host)``: the next ``sample(rng)``, the same stream, made cheap for the hot path: an
        empirical draw is ``randrange(len(values))`` as CPython's ``Random`` computes it (getrandbits of
        the length's bit count, redrawn while out of range), without its argument checks."""
        if self.kind != "empirical":
            return lambda host: self.sample(rng)
        vals, n = self.values, len(self.values)
        k, bits = n.bit_length(), rng.getrandbits

        def draw(host: Any) -> int:
            r = bits(k)
            while r >= n:
                r = bits(k)
            return vals[r]
        return draw

    def to_dict(self) -> dict[str, Any]:
        # a fixed latency keeps its ms even at the field's default (2): Latency.fixed needs it back
        return {k: list(v) if k == "values" else v for k, v in dataclasses.asdict(self).items()
                if v != Latency.__dataclass_fields__[k].default or k == "kind" or (k, self.kind) == ("ms", "fixed")}

    @classmethod
    def from_value(cls, value: Any) -> Latency:
        """A Latency, an int (fixed ms), a name (``"measured"``: the 300 quiet fires of ``QUIET_LATENESS_MS``,
        replayed seeded; ``"measured-loaded"``: the 300 fires under load of ``LOADED_LATENESS_MS``; ``"exact"``:
        2 ms, always), or a dict such as ``{"kind": "uniform", "lo": 1, "hi": 5}``."""
        if isinstance(value, Latency):
            return value
        if isinstance(value, str) and value in NAMED_LATENCIES:
            return NAMED_LATENCIES[value]()
        if isinstance(value, int) and not isinstance(value, bool):
            return cls.fixed(value)
        if isinstance(value, dict):
            kind = value.get("kind", "fixed")
            args = {k: v for k, v in value.items() if k != "kind"}
            makers = {"fixed": cls.fixed, "uniform": cls.uniform, "failover": cls.failover, "empirical": cls.empirical}
            if kind not in makers:
                raise AlarmkitError(f"unknown latency kind {kind!r}; use one of {sorted(makers)}")
            try:
                return makers[kind](**args)
            except TypeError as err:
                raise AlarmkitError(f"bad {kind} latency {value!r}: {err}") from None
        raise AlarmkitError(f"latency must be an int of ms, one of {sorted(NAMED_LATENCIES)}, a dict or a Latency, "
                            f"got {value!r}")


# the names Latency.from_value (and so Simulation(fire_latency=...)) takes
NAMED_LATENCIES: Mapping[str, Any] = MappingProxyType({
    "measured": Latency.measured, "measured-loaded": lambda: Latency.measured(loaded=True),
    "exact": lambda: Latency.fixed(2)})


def _nonneg(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_MS:
        raise AlarmkitError(f"latency {name} must be a non-negative int of ms (at most 2**53), got {v!r}")
    return v


@dataclass(frozen=True)
class Profile:
    """What a runtime does with alarms. ``scheduler`` names the scheduler implementation."""

    name: str
    scheduler: str = "workerd"
    # src/workerd/server/alarm-scheduler.h: RETRY_START_SECONDS = 2
    retry_start_ms: int = 2_000
    # alarm-scheduler.h: RETRY_MAX_TRIES = 6 (the first run plus 6 counted retries)
    retry_max_tries: int = 6
    # alarm-scheduler.h: RETRY_BACKOFF_MAX = 9 (uncounted failures back off to 2 << 9 s = 1024 s)
    backoff_max_shift: int = 9
    # alarm-scheduler.h: RETRY_JITTER_FACTOR = 0.25 (jitter uniform in [0, floor(0.25 * delay ms)])
    jitter_factor: float = 0.25
    # Cloudflare docs (Durable Objects limits): alarm() has a 15-minute wall-clock limit
    handler_limit_ms: int = 15 * 60 * 1000
    # how late a fire starts: a seeded draw from 300 fires of local workerd on a quiet machine
    # (QUIET_LATENESS_MS below, fire_latency="measured"); fire_latency="exact" (2 ms, always) is for teaching
    # and for tests whose subject is not lateness
    fire_latency: Latency = field(default_factory=Latency.measured)
    # an idle object is evicted after this long (a simulation knob; Cloudflare evicts idle
    # objects after tens of seconds, so 70 s is a stand-in, not a quoted figure)
    idle_evict_ms: int = 70_000
    # how a facet's set_alarm fails: "commit-breaks-facet" (workerd 2026-11-17),
    # "commit-breaks-actor" (before PR #7085), or None (no facets, e.g. celld)
    facet_alarms: str | None = "commit-breaks-facet"
    # celld only (crates/logic/wake.rs, CELLD_WAKER_TICK_MS and CELLD_ALARM_RESIDENT_MS defaults)
    waker_tick_ms: int = 60_000
    resident_ms: int = 3_600_000
    # what a set_alarm made inside alarm() does when its time (clamped to now) equals the running alarm's
    # scheduledTime: setAlarm(Date.now()) in a handler that started in the same millisecond as its
    # scheduled time (workerd issue 6866, "setAlarm(Date.now()) issued from inside alarm() ... never fires
    # promptly"; "setAlarm(Date.now() + 1) works correctly in both environments"). A later time chains.
    # "fires": it runs at once, the documented promise for a time at or before now ("scheduled for
    # asynchronous execution in the immediate future", storage API docs); not measured: the issue's
    # reporter saw production keep it stored and run it "tens of seconds" later "if at all, until the
    # object is next disturbed", a delay alarmkit does not model. "same-time-unfired": it stays stored
    # (get_alarm() shows it, overdue) and never fires until code sets the alarm again. For local workerd
    # 1.20261117.1 a stalled chain was reported before (stored, not cleared, not fired); re-run
    # on 2026-12-01, 24 chains re-arming at or before now (Date.now(), Date.now() - 1000, scheduledTime;
    # SQLite and KV storage; compatibility dates 2026-11-17 and 2026-01-28) ran every tick, but no handler
    # there started in the same millisecond as its scheduledTime (1 to 60 ms late), so the equal-time
    # case itself was not re-observed. The reporter saw older local builds clear it instead.
    # Calibration probes rearm_now / rearm_scheduled (chains of five re-arms): every real chain ran all six
    # fires; workerd-local's model stalls about a third of such chains, since its latency sample is 0 ms in
    # 2 of 27 fires (docs/calibration.md, differences found (7)).
    rearm_at_now: str = "fires"
    # the Worker's compatibility date (YYYY-MM-DD); only id_name_since reads it
    compatibility_date: str = "2026-11-17"
    # ctx.id.name in an instance an alarm woke cold (its constructor ran for that alarm): present when the
    # compatibility date is on or after this date, None before it. From sources, not measured in
    # production: cloudflare-docs PR 28956 (ctx.id.name in alarm handlers since 2026-03-15) and partykit
    # issues 333/390 (this.name unavailable in an alarm-woken object; with a compat date before 2026-03-15
    # even for new alarms). None: always present (local workerd 1.20261117.1: the name was present in the
    # constructor and alarm() of an object the alarm woke 16 s after its last request, the constructor
    # running again at the alarm, under compatibility dates 2026-11-17 and 2026-01-28; re-run 2026-12-01)
    id_name_since: str | None = "2026-03-15"
    # an alarm whose object's constructor throws: workerd retries it without counting (alarm-scheduler.c++
    # makeAlarmTask catches the failure to start the event: countedRetry false), so a constructor that never
    # recovers backs off forever and never exhausts (False); True counts it as alarm()'s failure
    constructor_failure_counted: bool = False
    # a due alarm of a class without alarm(): "drop" (workerd: runAlarm logs a warning once per isolate and
    # returns retry = false; the alarm is deleted) or "retry" (a counted failure, retried to abandonment)
    no_alarm_handler: str = "drop"
    # alarm() past handler_limit_ms: True resets the object (workerd: context.abort(), a new instance for the
    # retry), False kills only the handler
    limit_resets: bool = True
    # alarms that fire at one virtual instant: "seeded" (workerd: each alarm has its own timer and nothing
    # orders them; real fires of 40 alarms due at one ms ran in an order neither arming nor id order, differing
    # between runs: probe same_instant) run in an order drawn from the seed, after the instant's other timers;
    # "arming" runs them in the order they were armed (the exact option, for teaching). Their spread in time
    # comes from fire_latency, one draw per fire
    same_instant_order: str = "seeded"
    version: str = ""

    def __post_init__(self) -> None:
        # every time a profile holds ends up on the clock, its name in the journal: refused here, not at a flush
        text("profile names", self.name)
        for name in ("retry_start_ms", "handler_limit_ms", "idle_evict_ms", "resident_ms", "waker_tick_ms"):
            time_ms(f"profile {self.name!r} setting {name}", getattr(self, name),
                    lo=1 if name in ("waker_tick_ms", "resident_ms") else 0)
        for name, hi in (("retry_max_tries", MAX_MS), ("backoff_max_shift", 53)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
                raise InvalidValue(f"profile {self.name!r} setting {name} must be an int in 0..{hi:,}, got {v!r}")
        if self.retry_start_ms << self.backoff_max_shift > MAX_MS:
            raise InvalidValue(
                f"profile {self.name!r}: retry_start_ms << backoff_max_shift = {self.retry_start_ms << self.backoff_max_shift:,} "
                "ms, past 2**53; lower one of them"
            )
        if not isinstance(self.jitter_factor, (int, float)) or not 0 <= self.jitter_factor <= 1:
            raise InvalidValue(f"profile {self.name!r} setting jitter_factor must be a number in 0..1, got {self.jitter_factor!r}")
        if self.rearm_at_now not in REARM_AT_NOW:
            raise InvalidValue(f"profile {self.name!r} setting rearm_at_now must be one of {list(REARM_AT_NOW)}, "
                               f"got {self.rearm_at_now!r}")
        for name in ("compatibility_date", "id_name_since"):
            v = getattr(self, name)
            if not (v is None and name == "id_name_since") and not _is_date(v):
                raise InvalidValue(f"profile {self.name!r} setting {name} must be a date 'YYYY-MM-DD'"
                                   f"{' or None' if name == 'id_name_since' else ''}, got {v!r}")
        for name in ("constructor_failure_counted", "limit_resets"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidValue(f"profile {self.name!r} setting {name} must be True or False, got {getattr(self, name)!r}")
        for name, allowed in (("no_alarm_handler", ("drop", "retry")), ("same_instant_order", ("seeded", "arming"))):
            if getattr(self, name) not in allowed:
                raise InvalidValue(f"profile {self.name!r} setting {name} must be one of {list(allowed)}, "
                                   f"got {getattr(self, name)!r}")
        if self.scheduler == "celld" and self.idle_evict_ms != self.resident_ms:
            # a cell stays resident for CELLD_ALARM_RESIDENT_MS after its last event: on celld that
            # is what alarmkit's idle eviction means (so `resident_ms=5_000` makes cells dormant fast)
            object.__setattr__(self, "idle_evict_ms", self.resident_ms)

    def replace(self, **changes: Any) -> Profile:
        if "fire_latency" in changes:
            changes["fire_latency"] = Latency.from_value(changes["fire_latency"])
        bad = sorted(set(changes) - set(self.__dataclass_fields__))
        if bad:
            raise AlarmkitError(f"unknown profile setting(s) {bad}; known: {sorted(self.__dataclass_fields__)}")
        return dataclasses.replace(self, **changes)

    def id_name_on_cold_alarm(self) -> bool:
        """Whether ``ctx.id.name`` is set in an instance that an alarm woke cold (``id_name_since``)."""
        return self.id_name_since is None or self.compatibility_date >= self.id_name_since

    def flag(self, name: str) -> bool:
        """Whether the compatibility flag ``name`` (``COMPAT_FLAGS``) is on at this profile's date."""
        try:
            return self.compatibility_date >= COMPAT_FLAGS[name]
        except KeyError:
            raise AlarmkitError(f"unknown compatibility flag {name!r}; known: {sorted(COMPAT_FLAGS)}") from None

    def retry_delay_ms(self, shift: int) -> int:
        """The nominal wait before a retry: ``retry_start << shift`` (no jitter)."""
        return self.retry_start_ms << shift

    def max_jitter_ms(self, delay_ms: int) -> int:
        # alarm-scheduler.c++ maxJitterMsForDelay: std::floor(RETRY_JITTER_FACTOR * delayMs)
        return math.floor(self.jitter_factor * delay_ms)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fire_latency"] = self.fire_latency.to_dict()
        return d


REARM_AT_NOW = ("fires", "same-time-unfired")

# compatibility flags alarmkit models, with the date each turns on (src/workerd/io/compatibility-date.capnp)
COMPAT_FLAGS: Mapping[str, str] = MappingProxyType({
    # deleteAll() also deletes the alarm (observed on local workerd 1.20261117.1: probe delete_all at
    # 2026-11-17 deletes it, at 2026-01-28 the alarm survives and fires)
    "delete_all_deletes_alarm": "2026-02-24",
})


def _is_date(value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 10:
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True

# workerd-local's fire latency: how late (fire - scheduledTime, ms) each of the 27 ordinary first fires
# was in the reference run alarmkit/calibrate/data/calibration-workerd-1.20261117.1.duckdb as committed in
# git 1d27644 (npm workerd@1.20261117.1 on a quiet machine; retry_count 0, a future alarm, no restart, no
# wake of an evicted object, no overlap probe: tests/runtime/test_latency_measured.py recomputes it from that
# file): median 1 ms, 0..13 ms, replayed seeded. The reference recorded next, under load, saw median 2, up to 74

MEASURED_FIRST_FIRES_MS = (0, 0, *[1] * 20, 2, 2, 2, 3, 13)

# Fire lateness (alarm() start - scheduledTime, ms) of 300 fires, probe lateness_many (100 objects armed 30 s in
# advance, three rounds, fires spread over 10 s) on npm workerd 1.20261117.1, (value, count) pairs;
# tests/runtime/test_latency_measured.py recomputes both from their files.
# QUIET (fire_latency="measured", the default of the workerd profiles). Recorded 2026-12-02 12:57-12:59 UTC on the shared 2-core machine
# while quiet (load average 0.06 when it began, 0.69 when it ended): alarmkit/calibrate/data/
# lateness-quiet-workerd-1.20261117.1.json. min 0, median 1, p90 2, max 44 ms (one fire; the next max is 9).
# A run just before it (load 0.82, then 0.14) saw min 0, median 1, p90 2, max 2 (its samples not kept).
QUIET_LATENESS_COUNTS = ((0, 5), (1, 220), (2, 68), (3, 3), (5, 1), (7, 1), (9, 1), (44, 1))
QUIET_LATENESS_MS = tuple(v for v, n in QUIET_LATENESS_COUNTS for _ in range(n))
# LOADED (fire_latency="measured-loaded"): the same probe, recorded the same day with the machine under load
# (load average 8-13): the lateness_many probe of alarmkit/calibrate/data/fidelity-workerd-1.20261117.1.json.
# min 1, median 4.5, p90 31, max 107 ms: what a busy host adds, not what workerd does on its own.
LOADED_LATENESS_COUNTS = (
    (1, 17), (2, 77), (3, 46), (4, 10), (5, 18), (6, 24), (7, 7), (8, 5), (9, 12), (10, 2), (11, 2), (12, 3),
    (13, 4), (14, 3), (15, 4), (16, 5), (17, 1), (18, 2), (19, 6), (20, 3), (21, 2), (22, 1), (23, 1), (24, 5),
    (26, 3), (27, 3), (29, 3), (31, 3), (32, 3), (33, 2), (34, 1), (35, 2), (37, 1), (38, 1), (39, 1), (46, 1),
    (48, 1), (53, 1), (56, 1), (57, 1), (61, 1), (63, 1), (64, 1), (66, 1), (70, 2), (74, 1), (76, 1), (85, 1),
    (93, 1), (94, 1), (107, 1),
)
LOADED_LATENESS_MS = tuple(v for v, n in LOADED_LATENESS_COUNTS for _ in range(n))

# every built-in profile, here and nowhere else; read-only (a variant is Profile.replace(...))
PROFILES: Mapping[str, Profile] = MappingProxyType({
    "workerd": Profile(name="workerd", version="1.20261117.1"),
    # workerd with the facet semantics before PR #7085; everything else, fire latency included, is workerd's
    "workerd-2026-07": Profile(name="workerd-2026-07", facet_alarms="commit-breaks-actor", version="2026-07"),
    # local workerd (npm workerd@1.20261117.1): "an idle object is evicted after about 10 s" (alarmkit
    # calibrate, probe wake_evicted); the "workerd" profile keeps a production-like 70 s. Its fire latency
    # is the 27 first fires above (MEASURED_FIRST_FIRES_MS); "workerd" draws from QUIET_LATENESS_MS.
    # On the same build a re-arm at the running alarm's own time was reported to stall (workerd issue 6866),
    # and ctx.id.name was present in a cold-woken alarm() under both compatibility dates tried (see Profile)
    "workerd-local": Profile(name="workerd-local", idle_evict_ms=10_000, version="1.20261117.1",
                             fire_latency=Latency.empirical(MEASURED_FIRST_FIRES_MS),
                             rearm_at_now="same-time-unfired", id_name_since=None),
    # celld (denoland/celld v0.3.0, snapshot 2026-08-20; its scheduler is alarmkit/_celld.py)
    "celld": Profile(
        name="celld",
        scheduler="celld",
        retry_start_ms=2_000,  # crates/logic/alarm.rs: BACKOFF_BASE_MS = 2000
        retry_max_tries=6,  # alarm.rs: RETRY_CEILING = 6 (counted retries; then the row is deleted)
        backoff_max_shift=6,  # alarm.rs: MAX_BACKOFF_SHIFT = 6 (longest wait 128 s)
        jitter_factor=0.0,  # celld has no jitter
        fire_latency=Latency.fixed(2),  # a resident cell's timer: "a few ms", as for workerd (not quoted)
        facet_alarms=None,  # celld has no facets: ctx.facets is not defined
        waker_tick_ms=60_000,  # CELLD_WAKER_TICK_MS default
        resident_ms=3_600_000,  # CELLD_ALARM_RESIDENT_MS default (1 h)
        idle_evict_ms=3_600_000,  # = resident_ms: a cell is resident until then
        # not measured on celld: alarmkit's behaviour before the workerd fidelity work
        constructor_failure_counted=True, no_alarm_handler="retry", limit_resets=False, same_instant_order="arming",
        version="0.3.0",
    ),
})


def get_profile(profile: str | Profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except (KeyError, TypeError):
        raise AlarmkitError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}") from None
