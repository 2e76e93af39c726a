# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version,-jupytext.text_representation.format_version
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Your own JavaScript Durable Object
#
# Most Durable Objects are written in TypeScript. alarmkit loads such a module unchanged (it
# imports `cloudflare:workers`, nothing of alarmkit), bundles it with esbuild as wrangler does, and
# runs it in Node.js under the simulation's virtual clock: `Date.now()`, `setTimeout` and
# `Math.random()` are the simulation's, `ctx.storage` is the simulation's storage, and the object's
# alarm is an alarmkit alarm, so workerd's retry ladder, the journal, faults, `explore` and the
# timelines apply to it. The JavaScript host needs Node.js 18+ (`python3 dev.py test` installs the
# pinned esbuild it uses; docs/workers.md, "JavaScript and TypeScript workers", says how it works).
#
# The worker here, `notebooks/workers/leases.ts`, is a lease ledger: leases in SQLite, one alarm at
# the earliest expiry, and a call to an outside revoke service for each expired lease.

# %%
import os

import alarmkit as ak
from alarmkit.plots import timeline
from alarmkit.workers import Response
from alarmkit.workers.js.scenarios import notebook_worker

# %% [markdown]
# CI runs this notebook with `ALARMKIT_CI=1` and fewer seeds.

# %%
SEEDS = 2 if os.environ.get("ALARMKIT_CI") else 10

# %%
WORKER = notebook_worker("leases.ts")

# %%
print(WORKER.read_text())

# %% [markdown]
# ## Driving it by hand
#
# `sim.load_worker` (the same call as for a Python Worker, notebook 10) binds the module's class under
# `LEASES` and a Python stub under `REVOKER` (outbound `fetch` is refused unless a binding stubs it).
# `w.env.LEASES.getByName("ledger")` is a stub: its calls are RPCs into the JS object, driven by
# `sim.call`.

# %%
sim = ak.Simulation(seed=1)

# %%
w = sim.load_worker(WORKER, bindings={"LEASES": "Leases", "REVOKER": lambda request: Response("revoked")})

# %%
w

# %%
ledger = w.env.LEASES.getByName("ledger")

# %%
sim.call(ledger.grant("a", 300))

# %%
sim.call(ledger.grant("b", 1_500))

# %%
sim.run()

# %% [markdown]
# Each lease is revoked 2 or 1 ms after it expires (the `workerd` profile's fire latency: seed 1's
# draws from 300 fires measured on local workerd); each revoke is an `effect` event named after the
# binding, keyed by the request's URL.

# %%
sim.events()[["t_ms", "kind", "scheduled_ms", "retry_count", "detail"]]

# %%
assert sim.events().query("kind == 'effect'")["t_ms"].tolist() == [302, 1501]

# %%
timeline(sim.events(), title="the TypeScript lease ledger: two leases, two fires, two revokes")

# %% [markdown]
# ## Finding the bug with `explore`
#
# `Leases.alarm()` deletes a lease's row, then awaits the revoke call. The delete commits when the
# turn ends at that await, and workerd's output gate lets the revoke request leave only after that
# commit (src/workerd/io/io-gate.h). So a crash alone does not lose a revoke: before the commit it
# loses the delete too (the retry revokes), after it the request is already out. What loses one is
# the revoke failing after the commit: the service answers 503, or the request never arrives.
# `revoke()` throws, the alarm fails and is retried, but the row is gone, so no retry makes the
# revoke. The scenario `js-leases` drives the ledger as above and owes one revoke per lease;
# `explore` runs it under a plan where the first revoke call fails before it reaches the service,
# crashes the object at every await on top of that, checks the obligations, and shrinks what it
# finds to a plan you can replay.

# %%
REVOKE_FAILS = ak.FaultPlan(effect_throws=[{"effect": "REVOKER", "times": 1, "when": "before"}])

# %%
found = ak.explore("js-leases", faults=REVOKE_FAILS, seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.plan.effect_throws[0].when == "before" and not cx.plan.crashes

# %% [markdown]
# ## The fix
#
# `LeasesFixed` revokes first and deletes after: a failed revoke throws before the delete, so the
# row stays and the retry revokes it (perhaps twice: at-least-once, so the revoke must tolerate
# repetition). The same plan, replayed on both classes, on one time axis:

# %%
journal = ak.Journal()

# %%
pair = cx.compare("js-leases-fixed", journal=journal, labels=("delete, then revoke", "revoke, then delete"))

# %%
pair.check().table()[["key", "due_ms", "done_ms", "count", "status"]]

# %%
pair.figure(kinds=["fault", "crash", "fire", "handler_error", "retry_scheduled", "effect", "handler_ok"],
            window=(0, 10_000), title="a revoke that fails after the delete committed")

# %%
fixed = ak.explore("js-leases-fixed", faults=REVOKE_FAILS, seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(fixed.report())

# %%
assert not fixed.counterexamples
