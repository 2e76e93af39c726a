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
# # 12 · Your Agent's schedules under virtual time
#
# An Agent of Cloudflare's Agents SDK keeps its own schedules: `this.schedule(10, "remind", ...)` is a
# row in the SDK's job table, and the object's one alarm wakes the SDK, which runs the rows that are
# due. workerd sees only that alarm: when a scheduled callback throws, the SDK tries it three times
# inside the same `alarm()` (100 ms to 3 s apart) and then drops it, and `alarm()` itself succeeds.
# alarmkit reads the SDK's own table after each turn and its console lines, so the journal holds the
# schedules as the SDK sees them (`lib_schedule`, `lib_ran`, `lib_failed`, `lib_dropped`,
# `lib_cancelled`), the timeline draws them and the verdict names a schedule the SDK dropped.
#
# The Agent, `notebooks/workers/agent/reminders.ts`, is written from the SDK's docs (agents 0.32.0,
# pinned in its `package-lock.json`): a delay, a `Date`, a cron, a cancelled schedule, a callback that
# throws once and one that always throws. Its packages are installed with `npm ci` into a cache folder
# (never into the repository) by `install_project`; it needs Node.js 18+ and npm.

# %%
import os

import alarmkit as ak
from alarmkit.journal import library_schedules, verdict_of_events
from alarmkit.plots import timeline
from alarmkit.workers import explore_worker, run_worker
from alarmkit.workers.js.projects import install_project
from alarmkit.workers.js.scenarios import notebook_worker

# %% [markdown]
# CI runs this notebook with `ALARMKIT_CI=1` and fewer seeds.

# %%
SEEDS = 1 if os.environ.get("ALARMKIT_CI") else 5

# %%
PROJECT = install_project(notebook_worker("agent"))

# %%
print((PROJECT / "reminders.ts").read_text())

# %% [markdown]
# ## Scheduling by hand
#
# `plan()` makes six schedules at 0 s and cancels the last: `remind` in 10 s, `remind` at a `Date` 60 s
# on, `digest` on the cron `*/5 * * * *` (the next five-minute mark: 300 s), `flaky` in 30 s, `broken`
# in 45 s. The SDK keeps the physical alarm at the earliest due row.

# %%
sim = ak.Simulation(seed=0)

# %%
w = sim.load_worker(wrangler=PROJECT / "wrangler.jsonc")

# %%
agent = w.env.REMINDERS.getByName("r")

# %%
ids = sim.call(agent.plan())

# %%
sim.run(until=400_000)

# %% [markdown]
# The schedules as the SDK saw them: each one's id, callback, due time, when it ended and how. `flaky`
# failed once and ran on the SDK's second attempt inside the same `alarm()`, 98 ms later (the SDK's
# jittered backoff, drawn from the seeded `Math.random`): its row says `ran`; `broken` failed all three attempts and was dropped. workerd's own rows
# (`fire`, `handler_ok`) show every `alarm()` succeeding: no platform retry ran.

# %%
schedules = library_schedules(sim.events())

# %%
schedules

# %%
assert schedules.set_index("callback").loc["broken", "outcome"] == "dropped"

# %%
assert (sim.events()["kind"] == "retry_scheduled").sum() == 0

# %% [markdown]
# The timeline: the SDK's schedules (green ▽ when made, a dotted line to the due time; ○ ran,
# ⊠ dropped, ◇ cancelled) under the alarm's own fires. Hover a mark for the SDK's id and callback.

# %%
timeline(sim.events(), title="an Agent's schedules: delay, Date, cron, cancel, a flaky and a broken callback")

# %% [markdown]
# The verdict names the schedule the SDK dropped (the `library_dropped` invariant):

# %%
verdict = verdict_of_events(sim.events())

# %%
print(verdict)

# %% [markdown]
# ## Crash points
#
# The drive (`notebooks/workers/agent/drive.json`) calls `plan()` at 0 s and expects, at 400 s, that
# `flaky` ran (its value stored) and the digest ran once. `explore_worker` crashes the object at every
# await it reaches (inside the SDK's retry loop too), adds random fault plans, and checks the
# expectations in every run. A crash in the middle of `alarm()` loses nothing: it fails the alarm,
# workerd retries it, and the SDK finds its row still there. What loses `flaky` is an `alarm()` that
# fails on every attempt (`handler_throws`): workerd gives up after its retries, and the SDK's rows
# wait in its table for a wake that never comes.

# %%
found = explore_worker(None, PROJECT / "drive.json", wrangler=PROJECT / "wrangler.jsonc", seeds=SEEDS, depth=1,
                       workers=1, progress=False, quiet=True, invariants=["expect"])

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "expect" and cx.plan.handler_throws and not cx.plan.crashes

# %% [markdown]
# Replayed (`run_worker` with the counterexample's plan and seed), the journal shows both sides: workerd
# abandoning the alarm after its retries, and the SDK's `flaky` still `pending` in its table.

# %%
replayed = run_worker(None, PROJECT / "drive.json", wrangler=PROJECT / "wrangler.jsonc", faults=cx.plan, seed=cx.seed)

# %%
library_schedules(replayed.events)[["callback", "due_ms", "ended_ms", "outcome"]]

# %%
timeline(replayed.events, title="every alarm() fails: workerd gives up, the SDK's schedules wait")
