"""Scenarios for a JavaScript lease ledger (notebook 11): ``js-leases`` loads a module (``module``, a
path, by default notebooks/workers/leases.ts; ``cls``, the class, by default ``Leases``), grants two
leases through it and owes one revoke per lease, made as a call to the ``REVOKER`` service, which the
journal records as an effect of that name. ``js-leases-fixed`` is the same with ``LeasesFixed``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...runtime import Simulation
from ...errors import AlarmkitError
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
    obligations = []
    for lease, ttl in {"a": 300, "b": 1_500}.items():
        due = sim.call(ledger.grant(lease, ttl))
        obligations.append({"object": "ledger", "effect": "REVOKER", "key": REVOKE_URL.format(lease),
                            "due_ms": due, "since_ms": sim.now})
    sim.run(until=600_000)
    return {"obligations": obligations, "horizon_ms": 600_000, "alarm": sim.alarms()["ledger"]}


@scenario("js-leases-fixed", "js-leases with the fixed class (cls=LeasesFixed): revoke first, then forget")
def js_leases_fixed(sim: Simulation, module: str = "", cls: str = "LeasesFixed") -> dict[str, Any]:
    return js_leases(sim, module, cls)
