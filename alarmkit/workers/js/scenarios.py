"""Scenarios for a JavaScript lease ledger (notebook 11): ``js-leases`` loads a module (``module``, a
path, by default notebooks/workers/leases.ts; ``cls``, the class, by default ``Leases``), grants two
leases through it and owes one revoke per lease, made as a call to the ``REVOKER`` service, which the
journal records as an effect of that name. ``js-leases-fixed`` is the same with ``LeasesFixed``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...runtime import Simulation
from ...errors import AlarmkitError, ObjectCrashed
from ...scenarios import scenario
from .._base import Response

__all__ = ["js_leases", "js_leases_fixed", "notebook_worker", "REVOKE_URL"]

REVOKE_URL = "https://revoker.example/revoke?id={}"


def notebook_worker(name: str) -> Path:
    """The path of a worker (a file or a project folder) under notebooks/workers/: beside the notebook (JupyterLab's folder), or
    in this source checkout's notebooks/ (how the notebook tests run it, from a temporary folder)."""
    for base in (Path.cwd() / "workers", Path(__file__).resolve().parents[3] / "notebooks" / "workers"):
        if (base / name).exists():
            return (base / name).resolve()
    raise AlarmkitError(f"no worker {name!r} in ./workers or the checkout's notebooks/workers; run from notebooks/")


@scenario("js-leases", "a JavaScript lease ledger (module=, cls=Leases) grants leases of 300 ms and 1.5 s and revokes each")
def js_leases(sim: Simulation, module: str = "", cls: str = "Leases") -> dict[str, Any]:
    w = sim.load_worker(module or notebook_worker("leases.ts"),
                        bindings={"LEASES": cls, "REVOKER": lambda request: Response("revoked")})
    ledger = w.env.LEASES.getByName("ledger")
    obligations, failed = [], []
    for lease, ttl in {"a": 300, "b": 1_500}.items():
        due = _grant(sim, ledger, lease, ttl)
        if due is None:  # every try crashed (explore's rpc:grant crash points): the client knows, nothing is owed
            failed.append(lease)
            continue
        obligations.append({"object": "ledger", "effect": "REVOKER", "key": REVOKE_URL.format(lease),
                            "due_ms": due, "since_ms": sim.now})
    sim.run(until=600_000)
    return {"obligations": obligations, "horizon_ms": 600_000, "alarm": sim.alarms()["ledger"], "failed_grants": failed}


def _grant(sim: Simulation, ledger: Any, lease: str, ttl: int) -> int | None:
    """The lease's due time, its grant tried up to 3 times as a client tries again after the ledger
    crashed in the call; None when every try crashed."""
    for _ in range(3):
        try:
            return sim.call(ledger.grant(lease, ttl))
        except ObjectCrashed:
            continue
    return None


@scenario("js-leases-fixed", "js-leases with the fixed class (cls=LeasesFixed): revoke first, then forget")
def js_leases_fixed(sim: Simulation, module: str = "", cls: str = "LeasesFixed") -> dict[str, Any]:
    return js_leases(sim, module, cls)
