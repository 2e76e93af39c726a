"""Shrinking a failing run to a minimal fault plan and seed, and printing it as a snippet."""

from __future__ import annotations

from ..errors import AlarmkitError
from ..runtime.faults import FaultPlan
from ._sweep import run_one

__all__ = ["shrink", "snippet"]


def shrink(scenario: str, plan: FaultPlan, seed: int, invariant: str, obj: str | None = None, *,
           params: dict | None = None, profile: str | None = None, budget: int = 300,
           ctx: dict | None = None) -> tuple[FaultPlan, int, dict, int]:
    """Greedily remove faults (then lower the seed) while the run still violates ``invariant``
    (on object ``obj``; any object if None). Runs here, one after another, at most ``budget`` runs.

    Returns ``(plan, seed, violation, runs_used)``; raises ``AlarmkitError`` if the run given
    does not fail in the first place.
    """
    if ctx is None:
        import alarmkit.scenarios  # noqa: F401  (registers the built-in scenarios)

        ctx = {"scenario": scenario, "params": dict(params or {}), "profile": profile, "invariants": None}
    plan = FaultPlan.from_dict(plan)
    runs = 0

    def fails(p: FaultPlan, s: int) -> dict | None:
        nonlocal runs
        runs += 1
        r = run_one(ctx, {"idx": -1, "key": "shrink", "kind": "shrink", "depth": 0, "seed": s,
                          "plan": p.to_dict(), "want_points": False})
        return next((v for v in r.violations
                     if v["invariant"] == invariant and (obj is None or v["object"] == obj)), None)

    found = fails(plan, seed)
    if found is None:
        raise AlarmkitError(
            f"{scenario} with {plan!r} and seed {seed} does not violate {invariant!r}, so there is nothing to "
            "shrink; if an exploration saw it fail, the scenario is not deterministic (a wall clock or an "
            "unseeded random source?)"
        )
    for _ in range(2):
        progress = True
        while progress and runs < budget:
            progress = False
            for cand in _smaller(plan):
                if runs >= budget:
                    break
                v = fails(cand, seed)
                if v is not None:
                    plan, found, progress = cand, v, True
                    break
        lowered = False
        for s in range(0, min(seed, 20)):
            if runs >= budget:
                break
            v = fails(plan, s)
            if v is not None:
                seed, found, lowered = s, v, True
                break
        if not lowered:
            break
    return plan, seed, found, runs


def _smaller(plan: FaultPlan):
    """Candidate plans, each a little simpler: whole fields first, then single parts, then numbers."""
    data = plan.to_dict()
    fields = [k for k in data if k != "object"]
    for k in fields:
        yield FaultPlan.from_dict({kk: vv for kk, vv in data.items() if kk != k})
    for k in fields:
        v = data[k]
        if isinstance(v, list) and len(v) > 1:
            for i in range(len(v)):
                yield FaultPlan.from_dict({**data, k: v[:i] + v[i + 1:]})
            if all(isinstance(x, int) for x in v) and min(v) > 1:
                yield FaultPlan.from_dict({**data, k: [x - 1 for x in v]})
    for et_i, et in enumerate(data.get("effect_throws", [])):
        for times in sorted({1, et.get("times", 1) - 1, et.get("times", 1) // 2}):
            if 1 <= times < et.get("times", 1):
                parts = list(data["effect_throws"])
                parts[et_i] = {**et, "times": times}
                yield FaultPlan.from_dict({**data, "effect_throws": parts})
    for i, rs in enumerate(data.get("restarts", [])):
        if rs.get("downtime_ms", 0) > 0:
            parts = list(data["restarts"])
            parts[i] = {**rs, "downtime_ms": 0}
            yield FaultPlan.from_dict({**data, "restarts": parts})
    if "object" in data:
        yield FaultPlan.from_dict({k: v for k, v in data.items() if k != "object"})


def snippet(scenario: str, plan: FaultPlan, seed: int, params: dict | None = None, profile: str | None = None,
            setup: str | None = None) -> str:
    """A short Python script that reproduces one run and prints its violations; ``setup`` (default: the
    registered scenario's ``replay_setup()``) goes first."""
    extra = "".join(f", {k}={v!r}" for k, v in (params or {}).items())
    if profile:
        extra += f", profile={profile!r}"
    from ..scenarios import SCENARIOS

    if not setup:
        known = SCENARIOS.get(scenario)
        setup = known.replay_setup() if known is not None else ""
    return "\n".join([
        "from alarmkit import FaultPlan, check, run_scenario",
        *([setup] if setup else []),
        "",
        f"plan = {plan.to_python()}",
        f"result = run_scenario({scenario!r}, seed={seed}, faults=plan{extra})",
        "for v in check(result).violations:",
        "    print(v.invariant, v.object, v.message)",
    ])
