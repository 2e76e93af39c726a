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
# # 3 · The six silent failures
#
# There are six well-known "ways an alarm handler fails silently": six mistakes that pass every happy-path
# test and lose or mistime work only when something goes wrong. Some of them were reproduced
# on local workerd and some were not ("I did not reproduce the harmful version", said of one).
# Here each mistake is a one-method subclass of the lease ledger, and `explore` searches for a fault
# plan that breaks it:
#
# 1. run the scenario once without faults and record every `await` each task reached;
# 2. crash the process at each of those points, one simulation per point (and, with `depth=2`,
#    at every point reached after that crash);
# 3. run random fault plans (handler throws, effects that fail, crashes, evictions, restarts, late
#    fires, duplicate deliveries) under many seeds;
# 4. check every run against invariants (`lost`, `early_effect`, `alarm_pushed_past_due`,
#    `dropped_wakeup`, ...) and shrink each failure to a minimal plan and seed.
#
# Every variant runs the same workload: six leases granted over the first 2.5 minutes, a status
# request every 3 minutes (each wakes a fresh instance, so the constructor runs), a client that
# retries a failed grant, and a 40-minute horizon. A scenario *declares what it owes*: each granted
# lease must be revoked at or after its expiry.

# %%
import os

import alarmkit as ak

# %% [markdown]
# CI runs this notebook with `ALARMKIT_CI=1` and fewer random seeds. `workers=1` runs every
# simulation in this kernel; `workers=None` would use a process per core.

# %%
SEEDS = 30 if os.environ.get("ALARMKIT_CI") else 200

# %%
journal = ak.Journal()

# %% [markdown]
# ## The correct ledger first
#
# The correct ledger, unchanged, under every single and double crash point plus the random plans.
# The verdict to hope for is "no lost work". It still runs some revocations more than once: that is
# at-least-once delivery, reported as *duplicates*, not as failures. The effect must tolerate them.

# %%
correct = ak.explore("lease-ledger", seeds=SEEDS, depth=2, workers=1, progress=False, quiet=True)

# %%
print(correct.report())

# %%
assert correct.ok

# %%
correct.duplicates

# %% [markdown]
# Each failure below follows the same steps: explore the variant, read the shrunk counterexample
# (it prints as a script you can paste anywhere), then `cx.compare("lease-ledger", journal=...)`
# replays it into the journal beside the correct ledger under the *same plan*: `.check()` reads
# the bad run against its obligations and `.figure(...)` plots the two runs on one time axis.
#
# ## 1 · Treating the alarm as the data
#
# > *Symptom: two expirations, one alarm, and the later one is lost when the earlier setAlarm
# > replaces it. Fix: keep expirations in a table and set the alarm to the minimum.*
#
# Each grant sets the alarm to its own lease's expiry and remembers which lease the alarm is for.
# No fault is needed: the minimal plan is empty.

# %%
found = ak.explore("lease-alarm-as-data", seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "lost"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("alarm as data", "correct ledger"))

# %% [markdown]
# `check` reads a run's journal against its obligations: one row per lease, done or lost, and why.

# %%
pair.check().table()[["key", "due_ms", "done_ms", "count", "status"]]

# %%
pair.figure(kinds=["arm", "fire", "effect", "handler_ok"], window=(0, 400_000), title="1 · the alarm as the data")

# %% [markdown]
# `pair.diff()` reads the two runs for the eye, down to where they part:
# the first arm the variant leaves out, and the revokes that never come.

# %%
print(pair.diff().summary())

# %% [markdown]
# Three leases are never revoked: every `set_alarm` (▼) replaced the alarm of the lease before it.
# The correct ledger's alarm only moves earlier, and every lease has its revoke (●).
#
# ## 2 · Setting the alarm unconditionally in the constructor
#
# > *Symptom: the alarm is pushed later every time the object wakes, and some expirations run late.
# > Fix: read getAlarm() and move it only earlier.* (On local workerd: "I did not reproduce the harmful
# > version.")
#
# The constructor arms "a sweep in a minute" whenever rows exist. The explorer needs one crash:
# the first `alarm()` dies at its first await, and the fresh instance its retry wakes has a
# constructor that moves the alarm a minute on, past the first lease's expiry.

# %%
found = ak.explore("lease-ctor-pushes-later", seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "alarm_pushed_past_due"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("constructor pushes later", "correct ledger"))

# %%
[(v.invariant, v.message) for v in pair.check().violations]

# %% [markdown]
# In this run the retried grant happens to pull the alarm back in the same millisecond (the long
# blue "moved earlier" arrow from 70 s to 15 s), so nothing ends up late: the invariant catches the
# *move* past a due time, which is the bug, before it costs anything. Any wake without an earlier
# grant right behind it would leave the lease 40 s late.

# %%
pair.figure(kinds=["arm", "crash", "construct", "fire", "effect"], window=(0, 100_000), title="2 · the constructor pushes the alarm later")

# %% [markdown]
# `pair.diff()` reads the two runs for the eye, down to where they part:
# the constructor's arm, the one event the correct ledger does not have.

# %%
print(pair.diff().summary())

# %% [markdown]
# ## 3 · Deleting before the effect
#
# > *Symptom: a crash loses the effect permanently. Fix: effect first, then the row, and an effect
# > that tolerates repetition.*
#
# The minimal plan: the first `revoke` fails *before* it happens. The handler had already deleted
# the row, and the writes of a handler that throws still commit, so the retry two seconds later
# finds nothing due.

# %%
found = ak.explore("lease-delete-before-effect", seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "lost"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("delete before effect", "correct ledger"))

# %%
pair.check().table()[["key", "due_ms", "done_ms", "count", "status"]]

# %%
pair.figure(kinds=["fault", "fire", "handler_error", "retry_scheduled", "effect", "handler_ok"], window=(0, 60_000),
        title="3 · the row deleted before the effect")

# %% [markdown]
# `pair.diff()` reads the two runs for the eye, down to where they part:
# the revoke the retry never runs, and the obligation lost with it.

# %%
print(pair.diff().summary())

# %% [markdown]
# ## 4 · Reading the clock instead of the table
#
# > *Symptom: alarms fire early or late and the handler does nothing, or handles the wrong rows.
# > Fix: query due rows by expire_at <= now every time.*
#
# The handler takes its own firing as proof that the earliest lease is due. Under workerd's turn
# model its DELETE and its re-arm commit together, so a crash cannot split them; it takes late fires
# plus a crash in the second `alarm()` (after its revoke ran, before its DELETE) for a run to revoke
# a lease that is still valid. The random plan that finds it comes within 200 seeds.

# %%
found = ak.explore("lease-reads-clock", seeds=200, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "early_effect"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("reads the clock", "correct ledger"))

# %%
pair.check().table()[["key", "due_ms", "done_ms", "count", "status"]]

# %%
pair.figure(kinds=["fault", "crash", "fire", "retry_scheduled", "effect", "handler_ok"], window=(0, 60_000),
        title="4 · the handler trusts its firing")

# %% [markdown]
# ## 5 · Calling setAlarm from alarm() and expecting getAlarm() to show the old one
#
# > *Symptom: a re-arm decision is based on null. Fix: remember that inside the handler getAlarm()
# > is null unless you have set a new one.*
#
# workerd: inside `alarm()`, `getAlarm()` returns null unless `setAlarm` was called since the
# handler started. A handler that re-arms only "if the alarm that just fired is still there" never
# re-arms. No fault needed: every `alarm()` drops the wake-up for the next lease, which then waits
# for the next unrelated request (here the 3-minute status calls) to run late.

# %%
found = ak.explore("lease-getalarm-in-handler", seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "dropped_wakeup"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("get_alarm() in handler", "correct ledger"))

# %%
pair.check().table()[["key", "due_ms", "done_ms", "late_ms", "status"]]

# %%
pair.figure(kinds=["arm", "fire", "effect", "construct"], window=(0, 400_000), title="5 · the re-arm decided on null")

# %% [markdown]
# ## 6 · Assuming a failing handler is retried forever
#
# > *Symptom: a transient outage or a bug lasting a few minutes leaves overdue rows that nothing
# > processes, with no error afterwards. Fix: re-arm on wake-up as above, and add a scheduled check
# > from outside.*
#
# The constructor never re-arms. The minimal plan: seven failed attempts, the first run and six
# retries (notebook 2). After that the alarm is abandoned; the status requests wake the object
# every 3 minutes, and nothing in it looks at the table. The correct ledger's constructor revives
# the work on the first wake after the failures.

# %%
found = ak.explore("lease-no-revival", seeds=SEEDS, depth=1, workers=1, progress=False, quiet=True)

# %%
print(found.report())

# %%
cx = found.counterexamples[0]

# %%
assert cx.invariant == "lost"

# %%
pair = cx.compare("lease-ledger", journal=journal, labels=("no revival", "correct ledger"))

# %%
pair.check().table()[["key", "due_ms", "done_ms", "count", "status"]]

# %%
pair.figure(kinds=["fire", "handler_error", "abandoned", "construct", "revive", "effect"], window=(0, 420_000),
        title="6 · retries run out and nothing revives the work")

# %% [markdown]
# ## Your own object
#
# Register a scenario (`@ak.scenario(name, description)` on `fn(sim, **params) -> dict`) whose
# summary carries `obligations` and `horizon_ms`, and the same search applies to it. From a shell:
# `alarmkit explore lease-no-revival --seeds 200`, or `--faults plan.toml` to replay one plan under
# many seeds. A counterexample's `snippet()` is the reproduction to paste into a bug report.

# %%
print(cx.snippet())
