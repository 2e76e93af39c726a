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
# # 2 · Retries, exhaustion and revival
#
# When `alarm()` throws, workerd retries it. The constants are in
# `src/workerd/server/alarm-scheduler.h`:
#
# | constant | value | meaning |
# | --- | --- | --- |
# | `ALARM_RETRY_START_SECONDS` | 2 | the first wait |
# | `ALARM_RETRY_MAX_TRIES` | 6 | counted retries before the alarm is abandoned |
# | `RETRY_BACKOFF_MAX` | 9 | the cap on the shift for uncounted failures (2 << 9 s = 1024 s) |
# | `RETRY_JITTER_FACTOR` | 0.25 | jitter: uniform 0 to floor(0.25 × delay) ms, added |
#
# The wait after failure *n* (n = 0, 1, ...) is `2 << n` seconds plus jitter. A handler that
# always throws runs **7 times** (the first run and 6 retries), waiting 2, 4, 8, 16, 32 and 64 s,
# each plus up to 25 %. Then the stored alarm is cleared, `getAlarm()` returns null, and nothing
# runs until the next `setAlarm`. This notebook shows the ladder, the silence after it, and the
# one thing that ends the silence: a constructor that re-arms on wake-up.

# %%
import os

import pandas as pd

import alarmkit as ak
from alarmkit.faults import FaultPlan
from alarmkit.plots import backoff_ladder, compare, timeline
from alarmkit.widgets import Explorer

# %% [markdown]
# CI runs this notebook with `ALARMKIT_CI=1` and fewer seeds; the pictures are the same shape.

# %%
SEEDS = range(8) if os.environ.get("ALARMKIT_CI") else range(60)

# %% [markdown]
# The profile holds the constants; `retry_delay_ms(n)` is the nominal wait `retry_start << n`
# and `max_jitter_ms(d)` the largest jitter for a wait of `d` ms.

# %%
workerd = ak.get_profile("workerd")

# %%
pd.DataFrame({"rung": range(6),
              "nominal wait (ms)": [workerd.retry_delay_ms(n) for n in range(6)],
              "max jitter (ms)": [workerd.max_jitter_ms(workerd.retry_delay_ms(n)) for n in range(6)]})

# %% [markdown]
# ## Exhaustion
#
# `lease-exhaustion` is a probe first run on local workerd: the lab's handler always throws, its constructor is
# kept from re-arming, and one lease is granted for 1 s.

# %%
journal = ak.Journal()

# %%
exhausted = ak.run_scenario("lease-exhaustion", seed=1, journal=journal)

# %% [markdown]
# Seven attempts, `retry_count` 0 to 6. Beside them, the attempts measured in a
# local `wrangler dev` run (+0, 2.0, 6.1, 14.5, 32.1, 67.9, 144.6 s after the first). Both are
# draws from the same ladder: the nominal cumulative times are 0, 2, 6, 14, 30, 62, 126 s, and
# the jitter can add up to a quarter of each wait (at most 157.5 s for the seventh attempt).

# %%
first = exhausted.attempts[0]["t_ms"]

# %%
pd.DataFrame({"retry_count": [a["retry_count"] for a in exhausted.attempts],
              "simulated, s after the first": [(a["t_ms"] - first) / 1000 for a in exhausted.attempts],
              "measured, local workerd": [0, 2.0, 6.1, 14.5, 32.1, 67.9, 144.6]})

# %%
assert [a["retry_count"] for a in exhausted.attempts] == [0, 1, 2, 3, 4, 5, 6]

# %% [markdown]
# After the seventh failure the journal has an `abandoned` event. The stored alarm is gone and
# the lease is still in the table, overdue: the state a local run found after "100 seconds of
# polling". Storage and scheduler agree (workerd#6396 was a bug where they did not).

# %%
exhausted["final_alarm"], exhausted["rows_left"]

# %%
timeline(journal.events(exhausted.run_id), title="lease-exhaustion: seven attempts, then silence")

# %% [markdown]
# ## The ladder against workerd's
#
# One run is one draw of the jitter. Run the probe with many seeds into one journal and plot
# every wait against the nominal ladder (the blue line) and its jitter band (shaded): every
# point should sit inside the band, spread across it.

# %%
ladder_journal = ak.Journal()

# %%
for seed in SEEDS:
    ak.run_scenario("lease-exhaustion", seed=seed, journal=ladder_journal)

# %%
backoff_ladder(ladder_journal.events(), profile="workerd")

# %% [markdown]
# The same check as numbers, straight from the journal with DuckDB (notebook 7 has more):
# per rung, the smallest and largest wait seen, against `2 << n` s and 1.25 × that.

# %%
ladder_journal.sql("""
    SELECT CAST(json_extract(detail, '$.rung') AS INT)        AS rung,
           count(*)                                            AS retries,
           min(CAST(json_extract(detail, '$.delay_ms') AS INT)) AS min_wait_ms,
           max(CAST(json_extract(detail, '$.delay_ms') AS INT)) AS max_wait_ms,
           2000 << rung                                        AS nominal_ms,
           CAST(floor(1.25 * (2000 << rung)) AS INT)            AS band_top_ms
    FROM events WHERE kind = 'retry_scheduled'
    GROUP BY rung ORDER BY rung
""")

# %% [markdown]
# ### Another runtime's ladder
#
# celld (`crates/logic/alarm.rs`) retries with the same base and ceiling but **no jitter** and a
# shift cap of 6: every seed gives the same times. `compare` puts the two runs on one time axis.

# %%
celld = ak.run_scenario("lease-exhaustion", seed=1, profile="celld", journal=journal)

# %%
[a["t_ms"] for a in celld.attempts]

# %%
compare({"workerd": journal.events(exhausted.run_id), "celld": journal.events(celld.run_id)},
        kinds=["fire", "handler_error", "retry_scheduled", "abandoned"], title="the same probe, two runtimes")

# %% [markdown]
# ## Counted and uncounted failures
#
# Only *counted* failures use up the six retries: a user exception, a resource limit, the
# 15-minute wall-clock limit. A failure that is not the worker's fault (an internal error, a
# broken output gate not caused by user code) retries with backoff but does **not** increment
# `retryCount`; `isRetry` stays false; it never abandons. A `FaultPlan` can inject either kind:
# here the first nine attempts fail uncounted.

# %%
uncounted = ak.run_scenario("lease-normal", seed=0, journal=journal, ttls=(300,),
                            faults=FaultPlan(uncounted=list(range(1, 10))))

# %% [markdown]
# Ten attempts, every one with `retry_count` 0, and the tenth succeeds: no abandonment. The
# waits keep doubling past the sixth (128, 256, 512 s; the cap is 2 << 9 s = 1024 s), so an outage
# that is not the worker's fault is retried for as long as it lasts, ever more slowly. The object
# was evicted while idle between attempts; each retry woke it again (a `construct` before the fire).

# %%
[(a["t_ms"], a["retry_count"]) for a in uncounted.attempts]

# %%
assert len(uncounted.attempts) == 10 and {a["retry_count"] for a in uncounted.attempts} == {0}

# %%
timeline(journal.events(uncounted.run_id), title="nine uncounted failures")

# %%
backoff_ladder(journal.events(uncounted.run_id))

# %% [markdown]
# ## Revival
#
# After exhaustion nothing runs the alarm until the next `setAlarm`. The fix is the
# constructor: every wake re-runs `ensure_alarm`, which finds the overdue row and no alarm, and
# sets one. `lease-revival` clears the failure, restarts the runtime (5 s of downtime), and makes
# a single request; the constructor re-arms, and the alarm fires 1 ms later and revokes the lease.

# %%
revived = ak.run_scenario("lease-revival", seed=1, journal=journal)

# %%
revived["request_at"], revived.attempts[-1], revived.effects, revived["rows_left"]

# %%
assert revived.effects == {"lease-0": 1} and revived["rows_left"] == []

# %% [markdown]
# The `revive` event (a green star) marks the constructor's re-arm; the restart is the hourglass
# in the runtime lane.

# %%
timeline(journal.events(revived.run_id), title="lease-revival")

# %% [markdown]
# ## Against the real runtime
#
# The same exhaustion ran on real workerd 1.20261117.1 (`alarmkit calibrate --long`) and is
# committed as `alarmkit/calibrate/data/calibration-workerd-1.20261117.1.duckdb`, so this needs no Node.js. On one
# time axis: the real run (top) and the simulator's (bottom). The attempts differ only by jitter;
# every retry wait lies within `2 s << n` and its +25 % band on both sides.

# %%
from alarmkit.calibrate import overlay_figure, recheck, reference

# %%
overlay_figure("exhaustion")

# %% [markdown]
# `recheck` compares today's simulator with every recorded probe (facts equal, timings in their
# bands): if a change to alarmkit's workerd profile drifted from the real runtime, this fails.

# %%
assert recheck(reference()).match

# %% [markdown]
# ## Try it
#
# The handler always throws and the constructor does not re-arm; the runtime restarts at 200 s
# with the failure cleared, and one request wakes the object. Untick **ctor doesn't re-arm**: the
# request revives the lease. Tick it again: the lease stays overdue forever. Change the **seed**
# to draw another jitter; set **restart at (ms)** to `60000` to restart *during* the ladder
# (the scheduler reloads the stored alarm, so the retries go on).

# %%
Explorer("lease-lab", leases=1, always_throw=True, noboot=True, restart_at_ms=200_000, horizon_ms=260_000,
         seed=1, journal=journal)
