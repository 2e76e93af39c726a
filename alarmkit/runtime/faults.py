"""The hook points where faults enter a simulation, and ``FaultPlan``: faults as a plain value.

``Faults`` does nothing; the runtime calls its hooks and nothing else, so a new kind of fault
never needs a change to the runtime's control flow. ``FaultPlan`` is a ``Faults`` that is also
a serialisable value (JSON, TOML, a Python literal): which alarm() attempts throw, which effect
calls fail, where the process dies, when objects are evicted or the runtime restarts, how late
fires are, which successful alarms are delivered again, when the alarm manager loses a stored alarm. Every fault it injects is journaled as
its own ``fault`` event, beside the effect it has.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._planfields import INT_LISTS, PARTS, DOCUMENTED_MAX_LATE_MS, Crash, EffectCrash, EffectThrow, Evict, ForgetAlarm, FaultPlanError, Restart, check_ints, check_latency, check_name, part_dict, check_parts, toml_value
from ..errors import InjectedError, UncountedFailure
from .profiles import Latency

if TYPE_CHECKING:  # pragma: no cover
    from ..kernel import Task
    from ._types import HostView as Host, SimView as Simulation  # views: the simulation applies plans

__all__ = [
    "Faults", "UncountedFailure", "InjectedError", "FaultPlan", "FaultPlanError",
    "Crash", "EffectThrow", "EffectCrash", "Evict", "Restart", "ForgetAlarm", "DOCUMENTED_MAX_LATE_MS",
]

class Faults:
    """No faults. Subclasses override the hooks they need."""

    def install(self, sim: Simulation) -> None:
        """Called once when the simulation starts: schedule evictions, restarts..."""

    def fire_latency(self, host: Host, latency: Latency, rng) -> int:
        """How late this fire is, in ms: by default a draw of the profile's ``latency`` from ``rng``, the
        fire-latency generator (seeded from the run's seed, apart from the kernel's source)."""
        return latency.sample(rng)

    def before_alarm(self, host: Host, invocation: int, retry_count: int) -> None:
        """Raise ``InjectedError`` (counted) or ``UncountedFailure`` to fail this attempt."""

    def crash_at_suspend(self, host: Host, task: Task) -> bool:
        """True to kill the process when ``task`` suspends (before this segment commits)."""
        return False

    def before_effect(self, host: Host, name: str, key: Any) -> None:
        """Raise to make the effect fail before it happens."""

    def after_effect(self, host: Host, name: str, key: Any) -> str | None:
        """Return "throw" to raise after the effect happened, "crash" to kill the process."""
        return None

    def after_success(self, host: Host, scheduled_ms: int) -> None:
        """Called when a handler succeeded and the alarm was cleared (duplicate delivery hooks here)."""

    def to_dict(self) -> dict[str, Any] | None:
        return None


@dataclass(frozen=True)
class FaultPlan(Faults):
    """Faults as a value. Every field is optional; lists accept dicts for their parts.

    >>> FaultPlan(handler_throws=[1, 2], crashes=[{"task": "alarm", "invocation": 3, "at_await": 1}])

    ``object`` limits handler, effect and duplicate faults to one object (None: every object).
    A plan keeps per-run counters that ``install`` resets: give each simulation its own plan, or
    run them one after another. Raises ``FaultPlanError`` naming the field for any bad value.
    """

    object: str | None = None
    handler_throws: tuple[int, ...] | str = ()
    uncounted: tuple[int, ...] | str = ()
    effect_throws: tuple[EffectThrow, ...] = ()
    crashes: tuple[Crash, ...] = ()
    crash_after_effect: tuple[EffectCrash, ...] = ()
    evictions: tuple[Evict, ...] = ()
    restarts: tuple[Restart, ...] = ()
    latency: Latency | None = None
    duplicates: tuple[int, ...] = ()
    forgotten_alarms: tuple[ForgetAlarm, ...] = ()
    _state: dict = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "object", check_name("object", self.object))
        ht = self.handler_throws
        set_(self, "handler_throws", "always" if ht == "always" else check_ints("handler_throws", ht))
        uc = self.uncounted
        set_(self, "uncounted", "always" if uc == "always" else check_ints("uncounted", uc))
        set_(self, "duplicates", check_ints("duplicates", self.duplicates))
        for name, cls in PARTS.items():
            set_(self, name, check_parts(name, cls, getattr(self, name)))
        set_(self, "latency", check_latency(self.latency))
        set_(self, "_state", {})

    # -- as a value ------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> FaultPlan:
        if isinstance(data, FaultPlan):
            return data
        if not isinstance(data, dict):
            raise FaultPlanError(f"a fault plan is a table of fields, got {type(data).__name__} {data!r}")
        bad = sorted(set(data) - set(_FIELDS))
        if bad:
            raise FaultPlanError(f"unknown fault plan field {bad[0]!r}; allowed fields: {list(_FIELDS)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data, non-default fields only (``FaultPlan.from_dict`` reads it back)."""
        out: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if name == "latency":
                if value is not None:
                    out[name] = value.to_dict()
            elif name in PARTS:
                if value:
                    out[name] = [part_dict(p) for p in value]
            elif name in INT_LISTS:
                if value:
                    out[name] = value if isinstance(value, str) else list(value)
            elif value is not None:
                out[name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> FaultPlan:
        if not isinstance(text, str):
            raise FaultPlanError(f"from_json takes JSON text (str), got {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise FaultPlanError(f"fault plan is not valid JSON: {err}") from None
        except RecursionError:  # "[[[[...": deeper than any plan, and than Python's parser goes
            raise FaultPlanError("fault plan JSON is nested too deeply to be a plan (a plan is 3 levels deep); "
                                 "check the file") from None
        return cls.from_dict(data)

    def to_toml(self) -> str:
        """The plan as TOML (scalars and lists first, then one ``[[table]]`` per part)."""
        data = self.to_dict()
        head, tables = [], []
        for name, value in data.items():
            if name in PARTS:
                for part in value:
                    tables.append(f"\n[[{name}]]")
                    tables.extend(f"{k} = {toml_value(v)}" for k, v in part.items())
            else:
                head.append(f"{name} = {toml_value(value)}")
        return "\n".join(head + tables) + "\n"

    @classmethod
    def from_toml(cls, text: str) -> FaultPlan:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise FaultPlanError(f"fault plan is not valid TOML: {err}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> FaultPlan:
        """Read a ``.json`` or ``.toml`` fault plan file."""
        p = Path(path)
        if p.suffix not in (".json", ".toml"):
            raise FaultPlanError(f"fault plan file {str(p)!r} must end in .json or .toml")
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as err:
            raise FaultPlanError(f"cannot read fault plan file {str(p)!r}: {err.strerror}") from None
        except UnicodeDecodeError as err:
            raise FaultPlanError(f"fault plan file {str(p)!r} is not UTF-8 text (byte {err.object[err.start]:#04x} "
                                 f"at offset {err.start}); save it as UTF-8") from None
        try:
            return cls.from_json(text) if p.suffix == ".json" else cls.from_toml(text)
        except FaultPlanError as err:
            raise FaultPlanError(f"{p.name}: {err}") from None

    def save(self, path: str | Path) -> Path:
        """Write the plan as ``.json`` or ``.toml``. An existing file is replaced only when alarmkit saved
        it (a TOML file with alarmkit's first line, a JSON file in the exact form ``save`` writes);
        anything else raises ``AlarmkitError`` and is left as it was."""
        p = Path(path)
        if p.suffix not in (".json", ".toml"):
            raise FaultPlanError(f"fault plan file {str(p)!r} must end in .json or .toml")
        from .._files import write_text

        text = self.to_json() + "\n" if p.suffix == ".json" else _TOML_TAG + self.to_toml()
        return write_text(p, text, ours=_is_saved_plan, flag="path", what="fault plan")

    def to_python(self) -> str:
        """A Python literal that builds this plan: ``FaultPlan(handler_throws=[1, 2])``."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"FaultPlan({args})"

    def __repr__(self) -> str:
        return self.to_python()

    def replace(self, **changes: Any) -> FaultPlan:
        return dataclasses.replace(self, **changes)

    def size(self) -> int:
        """How many faults the plan names (a shrinking measure; "always" and latency count one)."""
        n = 0
        for name in _FIELDS:
            value = getattr(self, name)
            if name == "latency":
                n += value is not None
            elif name != "object":
                n += 1 if isinstance(value, str) else len(value)
        return n

    # -- applied to a simulation -------------------------------------------------------------------
    def install(self, sim: Simulation) -> None:
        st = self._state
        st.clear()
        st.update(sim=sim, calls={}, ordinals={}, counts={}, successes={}, points=[],
                  crash=_crash_index(self.crashes), applied={}, fires=0)
        # attempt numbers -> entry indices: one dict look-up per attempt, however long the list
        for name in ("handler_throws", "uncounted", "duplicates"):
            value = getattr(self, name)
            st[name] = {} if isinstance(value, str) else _index(value)
        kernel = sim.kernel
        for ev in self.evictions:
            kernel.call_at(max(ev.at_ms, kernel.now), self._evict, sim, ev)
        for rs in self.restarts:
            kernel.call_at(max(rs.at_ms, kernel.now), self._restart, sim, rs)
        for fa in self.forgotten_alarms:
            kernel.call_at(max(fa.at_ms, kernel.now), self._forget, sim, fa)

    @property
    def points(self) -> list[tuple]:
        """Every suspension reached in the last run: ``(object, task, invocation, await, t_ms)``."""
        return self._state.get("points", [])

    def _mine(self, host: Host) -> bool:
        return self.object is None or host.label == self.object

    def _log(self, host: Host | None, detail: dict) -> None:
        self._state["sim"].log("fault", host, None, None, None, detail)

    def _applied(self, name: str, indices: Any) -> None:
        """Count one fault injected by entry ``name[i]`` for each ``i`` (equal entries share it)."""
        applied = self._state["applied"]
        for key in [name] if indices is None else [f"{name}[{i}]" for i in indices]:
            applied[key] = applied.get(key, 0) + 1

    def applied(self) -> dict[str, int]:
        """How many faults each entry of the plan injected in the last run: ``{"crashes[0]": 1, ...}``,
        every entry listed (0 for one that never matched); see ``alarmkit.faults.unapplied``."""
        from ._applied import entries

        counts = {**self._state.get("applied", {}), "latency": self._state.get("fires", 0)}
        return {key: counts.get(key, 0) for key in entries(self)}

    def _evict(self, sim: Simulation, ev: Evict) -> None:
        for host in sim.hosts():
            if host.instance is not None and (ev.object is None or host.label == ev.object):
                self._log(host, {"fault": "evict", "at_ms": ev.at_ms})
                self._applied("evictions", [i for i, e in enumerate(self.evictions) if e is ev])
                host.evict("injected")

    def _restart(self, sim: Simulation, rs: Restart) -> None:
        if sim.down:
            return  # already down: nothing to inject
        self._log(None, {"fault": "restart", "at_ms": rs.at_ms, "downtime_ms": rs.downtime_ms})
        self._applied("restarts", [i for i, r in enumerate(self.restarts) if r is rs])
        sim.restart(rs.downtime_ms)

    def _forget(self, sim: Simulation, fa: ForgetAlarm) -> None:
        forget = getattr(sim.scheduler, "forget", None)  # celld keeps no alarm apart from its row
        for host in sim.hosts() if forget is not None else ():
            if fa.object is not None and host.label != fa.object:
                continue
            stored = forget(host)
            if stored is not None:
                self._log(host, {"fault": "forgotten_alarm", "at_ms": fa.at_ms, "stored_ms": stored})
                self._applied("forgotten_alarms", [i for i, f in enumerate(self.forgotten_alarms) if f is fa])

    def fire_latency(self, host: Host, latency: Latency, rng) -> int:
        if self.latency is None:
            return latency.sample(rng)
        self._state["fires"] += 1  # the plan's latency drew this fire's delay: the entry applied
        # a plan's latency is a fault: drawn from the run's seeded source, not the profile's fire-latency
        # generator (rng), so a printed (seed, plan) replays the same whatever the profile's latency
        late = self.latency.sample(self._state["sim"].kernel.rng)
        if late > _usual_max(latency):
            self._log(host, {"fault": "late_fire", "late_ms": late})
        return late

    def before_alarm(self, host: Host, invocation: int, retry_count: int) -> None:
        if not self._mine(host):
            return
        st = self._state
        if self.handler_throws == "always" or invocation in st["handler_throws"]:
            self._log(host, {"fault": "handler_throws", "attempt": invocation})
            self._applied("handler_throws", st["handler_throws"].get(invocation))  # None: "always"
            raise InjectedError(f"injected: alarm() attempt {invocation} throws")
        hit = st["uncounted"].get(invocation)
        if hit is not None or self.uncounted == "always":
            self._log(host, {"fault": "uncounted", "attempt": invocation})
            self._applied("uncounted", hit)  # None: "always"
            raise UncountedFailure(f"injected: alarm() attempt {invocation} failed, not the worker's fault")

    def crash_at_suspend(self, host: Host, task: Task) -> bool:
        st = self._state
        name, k = task.name, task.awaits
        if name == "alarm":
            inv = host.invocations  # one alarm() at a time per object: this is its attempt number
        elif k == 1:
            key = (host.label, name)
            inv = st["counts"][key] = st["counts"].get(key, 0) + 1
            st["ordinals"][task] = inv
        else:
            inv = st["ordinals"].get(task, 0)
        st["points"].append((host.label, name, inv, k, st["sim"].kernel.now))
        crash = st["crash"]
        if crash:
            hit = crash.get((host.label, name, inv, k), ()) + crash.get((None, name, inv, k), ())
            if hit:
                self._log(host, {"fault": "crash", "task": name, "invocation": inv, "at_await": k})
                self._applied("crashes", hit)
                return True
        return False

    def _effect_call(self, host: Host, name: str) -> int:
        calls = self._state["calls"]
        key = (host.label, name)
        calls[key] = calls.get(key, 0) + 1
        return calls[key]

    def before_effect(self, host: Host, name: str, key: Any) -> None:
        n = self._effect_call(host, name)  # every object's calls: the names seen explain a plan that missed
        if not self._mine(host):
            return
        for i, et in enumerate(self.effect_throws):
            if et.when == "before" and et.effect == name and n <= et.times:
                self._log(host, {"fault": "effect_throws", "effect": name, "key": key, "call": n, "when": "before"})
                self._applied("effect_throws", (i,))
                raise InjectedError(f"injected: effect {name}({key!r}) failed before it happened (call {n})")

    def after_effect(self, host: Host, name: str, key: Any) -> str | None:
        if not self._mine(host):
            return None
        n = self._state["calls"].get((host.label, name), 0)
        for i, ec in enumerate(self.crash_after_effect):
            if ec.effect == name and ec.call == n:
                self._log(host, {"fault": "crash_after_effect", "effect": name, "key": key, "call": n})
                self._applied("crash_after_effect", (i,))
                return "crash"
        for i, et in enumerate(self.effect_throws):
            if et.when == "after" and et.effect == name and n <= et.times:
                self._log(host, {"fault": "effect_throws", "effect": name, "key": key, "call": n, "when": "after"})
                self._applied("effect_throws", (i,))
                return "throw"
        return None

    def after_success(self, host: Host, scheduled_ms: int) -> None:
        succ = self._state["successes"]
        n = succ[host.label] = succ.get(host.label, 0) + 1
        if not self._mine(host):
            return
        hit = self._state["duplicates"].get(n)
        if hit is not None:
            # "In rare cases, alarms may fire more than once": the cleared alarm comes back once
            self._log(host, {"fault": "duplicate", "success": n, "scheduled_ms": scheduled_ms})
            self._applied("duplicates", hit)
            host.platform_arm(scheduled_ms, "duplicate")


_FIELDS = [f.name for f in dataclasses.fields(FaultPlan) if f.init]


def _crash_index(crashes: tuple[Crash, ...]) -> dict[tuple, tuple[int, ...]]:
    """(object, task, invocation, await) -> the indices of the crash entries naming that point."""
    return _index((c.object, c.task, c.invocation, c.at_await) for c in crashes)


def _index(values: Any) -> dict[Any, tuple[int, ...]]:
    out: dict[Any, tuple[int, ...]] = {}
    for i, v in enumerate(values):
        out[v] = out.get(v, ()) + (i,)
    return out


def _usual_max(latency: Latency) -> int:
    if latency.kind == "empirical":  # a measured sample: anything it holds is usual
        return latency.most_ms()
    return latency.ms if latency.kind == "fixed" else latency.hi


# The first line of a TOML plan ``FaultPlan.save`` wrote: a later save may replace that file.
_TOML_TAG = "# fault plan saved by alarmkit (FaultPlan.save)\n"


def _is_saved_plan(path: Path) -> bool:
    """A plan file ``save`` wrote: TOML with its tag; JSON exactly as ``to_json`` writes it (a hand-written
    plan is never in that one form, and is kept)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if str(path).endswith(".toml"):
        return text.startswith(_TOML_TAG)
    try:
        return text == FaultPlan.from_json(text).to_json() + "\n"
    except Exception:  # noqa: BLE001 - anything that does not parse is not ours
        return False


from .._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
