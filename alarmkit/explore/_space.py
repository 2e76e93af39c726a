"""``FaultSpace``: where the explorer's random fault plans come from."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ..errors import AlarmkitError
from ..runtime.faults import DOCUMENTED_MAX_LATE_MS, FaultPlan

__all__ = ["Domain", "FaultSpace"]


@dataclass
class Domain:
    """What the fault-free run showed there is to break."""

    points: list[tuple] = field(default_factory=list)  # (object, task, invocation, await)
    effects: list[str] = field(default_factory=list)
    effect_calls: int = 0  # most calls of one effect on one object
    attempts: int = 0  # most alarm() attempts on one object
    successes: int = 0  # most successful alarm() runs on one object
    window_ms: int = 0  # faults are drawn in [0, window]


@dataclass(frozen=True)
class FaultSpace:
    """Where random fault plans come from. Each kind of fault is drawn with probability ``p_*``
    and bounded by ``max_*``; times fall in ``[0, window_ms]`` (None: up to the last obligation's
    due time in the fault-free run). Crash points and effect names come from that run.

    The defaults are bounded so a correct object can finish: no "always", at most nine alarm()
    attempts in a row throw (seven use up workerd's retries), latency at most the documented minute.
    """

    p_throws: float = 0.4
    max_burst: int = 9
    p_uncounted: float = 0.25
    max_uncounted: int = 3
    p_effect_throws: float = 0.3
    max_effect_throws: int = 8
    p_crash: float = 0.3
    max_crashes: int = 2
    p_crash_after_effect: float = 0.2
    p_evict: float = 0.3
    max_evictions: int = 3
    p_restart: float = 0.2
    max_restarts: int = 2
    max_downtime_ms: int = 60_000
    p_latency: float = 0.2
    p_duplicate: float = 0.3
    max_duplicates: int = 2
    window_ms: int | None = None

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if name.startswith("p_") and not (isinstance(value, (int, float)) and 0 <= value <= 1):
                raise AlarmkitError(f"FaultSpace.{name} is a probability in [0, 1], got {value!r}")
            if name.startswith("max_") and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise AlarmkitError(f"FaultSpace.{name} must be an int >= 1, got {value!r}")

    @classmethod
    def from_dict(cls, data: dict) -> FaultSpace:
        bad = sorted(set(data) - set(cls.__dataclass_fields__))
        if bad:
            raise AlarmkitError(f"unknown FaultSpace field {bad[0]!r}; allowed: {sorted(cls.__dataclass_fields__)}")
        return cls(**data)

    def draw(self, seed: int, domain: Domain) -> FaultPlan:
        """The plan for random run ``seed`` (the same seed always draws the same plan)."""
        rng = random.Random(f"alarmkit-fault-space:{seed}")
        window = self.window_ms if self.window_ms is not None else domain.window_ms
        attempts = max(1, domain.attempts)
        kw: dict[str, Any] = {}
        if rng.random() < self.p_throws:
            start = rng.randint(1, attempts)
            kw["handler_throws"] = list(range(start, start + rng.randint(1, self.max_burst)))
        if rng.random() < self.p_uncounted:
            pool = range(1, attempts + 3)
            kw["uncounted"] = rng.sample(pool, min(len(pool), rng.randint(1, self.max_uncounted)))
        if domain.effects and rng.random() < self.p_effect_throws:
            kw["effect_throws"] = [{"effect": rng.choice(domain.effects), "times": rng.randint(1, self.max_effect_throws),
                                    "when": rng.choice(("after", "before"))}]
        if domain.points and rng.random() < self.p_crash:
            pts = rng.sample(domain.points, min(len(domain.points), rng.randint(1, self.max_crashes)))
            kw["crashes"] = [{"object": o, "task": t, "invocation": i, "at_await": k} for o, t, i, k in pts]
        if domain.effects and rng.random() < self.p_crash_after_effect:
            kw["crash_after_effect"] = [{"effect": rng.choice(domain.effects),
                                         "call": rng.randint(1, max(1, domain.effect_calls))}]
        if rng.random() < self.p_evict:
            kw["evictions"] = [{"at_ms": rng.randint(0, window)} for _ in range(rng.randint(1, self.max_evictions))]
        if rng.random() < self.p_restart:
            kw["restarts"] = [{"at_ms": rng.randint(0, window), "downtime_ms": rng.randint(0, self.max_downtime_ms)}
                              for _ in range(rng.randint(1, self.max_restarts))]
        if rng.random() < self.p_latency:
            kw["latency"] = {"kind": "failover", "p": round(rng.uniform(0.05, 0.5), 2), "lo": 1, "hi": 5,
                             "max_ms": DOCUMENTED_MAX_LATE_MS}
        if domain.successes and rng.random() < self.p_duplicate:
            pool = range(1, domain.successes + 1)
            kw["duplicates"] = rng.sample(pool, min(len(pool), rng.randint(1, self.max_duplicates)))
        return FaultPlan(**kw)
