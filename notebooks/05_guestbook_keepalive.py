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
# # 5 · The guestbook keepalive
#
# A stream processor signs guestbook entries in batches. If its process dies mid-batch,
# nothing in the stream will call it again: the **keepalive** is the durable alarm that comes back
# for the unfinished work. What it needs from an alarm transport, in its designers' words:
#
# * **millisecond-precision arming**: "the backoff ladder's first rung is 10s
#   (`KEEPALIVE_ALARM_LEAD_MS`); minute-granular transports are unacceptable";
# * **at-least-once fire delivery**: "a LOST fire is unrecoverable ... late (minutes), early, and
#   duplicate fires are all tolerated — the keepalive self-gates on its persisted `armedAtMs` and
#   every path is idempotent";
# * "`AlarmInvocationInfo` is informational only; the durable **revivals counter** mark is the
#   enforcement", with a **crash-loop budget** and a deploy-reset lane.
#
# alarmkit's keepalive (`alarmkit/scenarios/keepalive.py`) touches alarms only through
# `ctx.storage`, so the same code runs as a root object, behind the facet proxy (notebook 4), and on
# celld (notebook 6).

# %%
import inspect

import pandas as pd

import alarmkit as ak
from alarmkit.plots import compare, timeline
from alarmkit.scenarios.keepalive import CRASH_LOOP_BUDGET, GuestbookProcessor, keepalive_lead_ms
from alarmkit.widgets import Explorer

# %%
journal = ak.Journal()

# %% [markdown]
# ## The rungs
#
# Armed 10 s ahead before each batch; after each revival it climbs a rung (20, 40, 80, then 160 s
# for good). Only the first rung is the design's; the climb is alarmkit's choice.

# %%
pd.DataFrame({"rung": range(6), "lead (ms)": [keepalive_lead_ms(n) for n in range(6)]})

# %% [markdown]
# ## Self-gating
#
# Every fire first compares the clock with the persisted record and decides what it is. Only a
# fire that finds work owed, with budget left, is a **revival**.

# %%
print(inspect.getsource(GuestbookProcessor._gate))

# %% [markdown]
# ## A revival
#
# `guestbook-root`: the processor is a root object; at 1 s it receives five entries (200 ms of work
# each) and its process dies 500 ms in. The keepalive was armed for 11 s; it fires at 11.002 s,
# finds three entries owed, bumps the durable revivals counter, re-arms at the next rung *before*
# the work (so a second crash is caught too), signs the rest, and disarms.

# %%
root = ak.run_scenario("guestbook-root", seed=0, journal=journal)

# %%
print("\n".join(root["report"]))

# %%
assert root["signed"] == [0, 1, 2, 3, 4] and root["revivals"] == 1

# %% [markdown]
# The keepalive's own journal rows (`keepalive_arm`, `keepalive_fire`, `revival`,
# `keepalive_disarm`) sit beside the platform's `arm` and `fire`:

# %%
journal.sql("""
    SELECT t_ms, kind, scheduled_ms, prev_scheduled_ms, detail FROM events
    WHERE run_id = ? AND kind IN ('arm', 'disarm', 'fire', 'keepalive_arm', 'keepalive_fire', 'revival',
                                  'keepalive_disarm', 'evict')
    ORDER BY seq
""", root.run_id)

# %%
timeline(journal.events(root.run_id), title="guestbook-root: died mid-batch, revived at +10 s")

# %% [markdown]
# ## Late, failed and duplicate fires are harmless
#
# The same run under three fault plans. A fire 30 s late still finds the record and proceeds. A
# keepalive handler that throws once is retried by workerd 2 s (plus jitter) later. A duplicate
# delivery of the successful fire ("in rare cases, alarms may fire more than once") finds no
# record (the revival disarmed) and does nothing.

# %%
late = ak.run_scenario("guestbook-root", seed=0, journal=journal,
                       faults=ak.FaultPlan(latency={"kind": "fixed", "ms": 30_000}))

# %%
retried = ak.run_scenario("guestbook-root", seed=0, journal=journal, faults=ak.FaultPlan(handler_throws=[1]))

# %%
duplicated = ak.run_scenario("guestbook-root", seed=0, journal=journal, faults=ak.FaultPlan(duplicates=[1]))

# %%
pd.DataFrame([{"plan": name, **fire, "signed": len(r["signed"]), "revivals": r["revivals"]}
              for name, r in [("30 s late", late), ("throws once", retried), ("duplicate", duplicated)]
              for fire in r["keepalive_fires"]])

# %%
compare({"no faults": journal.events(root.run_id), "30 s late": journal.events(late.run_id),
         "throws once": journal.events(retried.run_id), "duplicate": journal.events(duplicated.run_id)},
        kinds=["arm", "disarm", "evict", "fire", "handler_error", "retry_scheduled", "handler_ok"],
        title="the same revival under three faults")

# %% [markdown]
# ## The crash-loop budget
#
# A revival re-runs the work that killed the process. If the work itself is the crash (a poison
# entry), the keepalive would revive forever. `guestbook-crash-loop`: build `v1` crashes on entry
# 1. Revivals at +10, +20 and +40 s; the fourth fire finds the budget spent (3 per build) and
# **parks** the keepalive: the record stays, the alarm is dropped. Each failing handler re-armed
# the next rung before it threw, so that alarm runs instead of workerd's retry (an early
# `setAlarm` suppresses the automatic retries).
#
# At 300 s a deploy of `v2` (a new `GUESTBOOK_VERSION`: the registry version of the
# deploy-reset lane) restarts the runtime; the first wake of the new build sees a keepalive parked
# by another build, re-arms it, and the revival at +10 s finishes the batch.

# %%
CRASH_LOOP_BUDGET

# %%
loop = ak.run_scenario("guestbook-crash-loop", seed=0, journal=journal)

# %%
pd.DataFrame(loop["keepalive_fires"])

# %%
loop["before_deploy"]

# %%
loop["signed"], loop["revivals_by_build"]

# %%
timeline(journal.events(loop.run_id), title="guestbook-crash-loop: three revivals, parked, deploy, revived")

# %% [markdown]
# Behind the facet proxy the timeline is the same: the budget and the revivals counter live in the
# facet's own storage, the alarm in the parent's.

# %%
proxied_loop = ak.run_scenario("guestbook-crash-loop", seed=0, hosting="facet-proxy", journal=journal)

# %%
[f["t_ms"] for f in proxied_loop["keepalive_fires"]] == [f["t_ms"] for f in loop["keepalive_fires"]]

# %% [markdown]
# ## Try it
#
# Change the **budget** (1 parks after the first revival; with 5, build v1 never parks: its fifth
# fire, at the 160 s rung, lands after the deploy), move the **deploy at** time, or set **hosting**
# to `"facet-proxy"`. The events table shows the `keepalive_fire` outcomes.

# %%
Explorer("guestbook-crash-loop", journal=journal)
