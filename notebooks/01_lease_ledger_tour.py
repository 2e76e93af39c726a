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
# # 1 · The lease ledger tour
#
# A Durable Object has **one alarm**. `setAlarm(t)` replaces whatever was set; there is no list of
# alarms, no name, no payload. Cloudflare's docs promise three things about it:
#
# * one alarm per object: `setAlarm()` replaces the current one;
# * **at-least-once** execution: a handler can run again from the beginning;
# * automatic retries with exponential backoff from 2 s, **up to 6 retries**, then nothing.
#
# An object that owns many expirations (leases, sessions, reservations) therefore cannot keep them
# *in* the alarm. The lease ledger keeps them in a table and treats the alarm as a wake-up
# call for the earliest row. This notebook walks through that ledger under alarmkit's virtual
# clock, where every time below is exact and repeatable.

# %%
import inspect

import alarmkit as ak
from alarmkit.plots import timeline
from alarmkit.scenarios.lease import LeaseLedger
from alarmkit.widgets import Explorer

# %% [markdown]
# ## The ledger, line for line
#
# The seven numbered comments are the design's: **(1)** the constructor re-arms on every wake,
# **(2)** the table is the truth, **(3)** the alarm only moves earlier, **(4)** the handler reads
# what is due *now*, **(5)** the effect runs first, **(6)** then the row is deleted, **(7)** the
# handler chains to the next expiry.

# %%
print(inspect.getsource(LeaseLedger))

# %% [markdown]
# ## Driving one object by hand
#
# A `Simulation` is a whole runtime on a virtual clock (integer milliseconds, starting at 0).
# `sim.namespace(binding, cls).get(name)` returns a stub; `sim.call(stub.method(...))` drives the
# clock until that RPC returns. Nothing here sleeps in real time.

# %%
sim = ak.Simulation(profile="workerd", seed=0)

# %%
ledger = sim.namespace("LEASES", LeaseLedger).get("ledger")

# %% [markdown]
# `sim.inspect(stub)` reads the object's *committed* storage and its alarm from outside, without
# waking it. Grant a 5-second lease and look at both: one row, and the alarm at its `expire_at`.

# %%
sim.call(ledger.grant("a", 5_000))

# %%
view = sim.inspect(ledger)
view.sql("SELECT id, expire_at FROM leases ORDER BY expire_at"), view.alarm

# %% [markdown]
# ### The alarm moves only earlier
#
# A 60-second lease adds a row but leaves the alarm alone: the earliest expiry is still 5 000 ms.
# `ensure_alarm` compares the table's minimum with `get_alarm()` and writes only when the new
# minimum is earlier, so calling it from the constructor, from `grant` and from `alarm` is safe.

# %%
sim.call(ledger.grant("b", 60_000))

# %%
view.sql("SELECT id, expire_at FROM leases ORDER BY expire_at"), view.alarm

# %% [markdown]
# A 1-second lease is the new minimum: the alarm moves **earlier**, from 5 000 to 1 000. The 5 s
# lease is not lost, even though its alarm was replaced: it is still a row, and the handler
# that runs at 1 000 ms chains the alarm to it (step 7).

# %%
sim.call(ledger.grant("c", 1_000))

# %%
view.sql("SELECT id, expire_at FROM leases ORDER BY expire_at"), view.alarm

# %%
assert view.alarm == 1_000

# %% [markdown]
# Run the clock to 1.5 s. The alarm fired at 1 001 ms (local workerd delivers within a few ms; the
# `workerd` profile draws each fire's lateness, seeded, from 300 fires measured on it: median 1 ms),
# revoked `c`, deleted its row, and re-armed for the next minimum.

# %%
sim.run(until=1_500)

# %%
view.sql("SELECT id, expire_at FROM leases ORDER BY expire_at"), view.alarm

# %% [markdown]
# Let it run to the end: every lease is revoked exactly once, the table is empty and
# `get_alarm()` is `None` (success clears the stored alarm unless the handler set a new one).

# %%
sim.run()

# %%
view.sql("SELECT id, expire_at FROM leases"), view.alarm

# %% [markdown]
# ## The journal is the record
#
# Every arm, fire, effect and handler outcome is an event row: `sim.events()` is a pandas
# DataFrame. `arm` rows carry `scheduled_ms`, the previous time in `prev_scheduled_ms`, and a
# `direction` (`new`, `earlier`, `later`); `effect` rows are the external work.

# %%
events = sim.events()

# %%
events[["t_ms", "kind", "scheduled_ms", "prev_scheduled_ms", "detail"]]

# %% [markdown]
# `timeline` draws one lane per object. Within a lane: the alarm row on top (▼ arms; a solid
# blue arrow when the alarm moved earlier), the handler row in the middle (◆ fire, ● ok), and
# the effects row at the bottom. Hover for details; drag to zoom; double-click to reset.

# %%
timeline(events, title="one ledger, three leases")

# %% [markdown]
# ## Three lab results from local workerd, as scenarios
#
# The same ledger is registered as named scenarios; `run_scenario` returns a summary with every
# `alarm()` attempt and how many times each effect ran. A `Journal` (DuckDB; here in memory)
# keeps every run for later queries (see notebook 7).

# %%
journal = ak.Journal()

# %% [markdown]
# **Normal path.** Two leases of 300 ms and 1 500 ms: "the alarm fired once for each, the second
# 1.2 s after the first, and the table ended up empty with `getAlarm()` equal to null."

# %%
normal = ak.run_scenario("lease-normal", seed=0, journal=journal)

# %%
normal.attempts, normal.effects, normal["final_alarm"]

# %%
timeline(journal.events(normal.run_id), title="lease-normal")

# %% [markdown]
# **Crash after the effect.** `revoke` throws once, *after* recording its call. The first attempt
# ran the effect and failed before the `DELETE`; the retry about 2 s later (`retry_count=1`) runs
# the effect again and removes the row. At-least-once means this duplicate is the design: the
# seed chose "duplicates over losses", so the effect must tolerate a repeat. The timeline links
# the duplicate to the first run with a dotted line.

# %%
crash = ak.run_scenario("lease-crash-after-effect", seed=0, journal=journal)

# %%
crash.attempts, crash.effects

# %%
assert crash.effects == {"lease-0": 2}

# %%
timeline(journal.events(crash.run_id), title="lease-crash-after-effect")

# %% [markdown]
# **Moves only earlier.** 5 s, then 60 s (no move), then 1 s (moves earlier): the alarm after
# each grant.

# %%
earlier = ak.run_scenario("lease-moves-only-earlier", seed=0, journal=journal)

# %%
earlier["alarm_after_each_grant"]

# %%
timeline(journal.events(earlier.run_id), title="lease-moves-only-earlier")

# %% [markdown]
# ## Explore it yourself
#
# The explorer runs the `lease-lab` scenario (the ledger with the lab's switches) every
# time a control changes. Try:
#
# * **lease lifetime** 300 → 5000: every fire slides right;
# * **revoke throws N times** 0 → 1: the first lease's effect runs twice (a red duplicate);
# * **handler always throws** with **ctor doesn't re-arm**: the full backoff ladder, then
#   abandonment (notebook 2);
# * **restart at (ms)** `200000` after that: the constructor's revival;
# * drag the **virtual time** slider, or press ▶, to replay the run as it stood at each moment.
#
# The export button writes a self-contained HTML report of the current run.

# %%
Explorer("lease-lab", leases=3, journal=journal)
