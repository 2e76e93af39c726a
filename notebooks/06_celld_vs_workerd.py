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
# # 6 · celld vs workerd: minute buckets against millisecond timers
#
# The keepalive of notebook 5 arms 10 s ahead, and its designers are blunt about the transport:
# "millisecond-precision arming ... minute-granular transports are unacceptable." workerd keeps
# every alarm on a millisecond timer. celld (denoland/celld v0.3.0, self-hosted distributed
# Durable Objects) has two tiers (`crates/logic/wake.rs`):
#
# * a **resident** cell (loaded in memory) fires from a per-cell millisecond timer;
# * a **dormant** cell is woken through **minute buckets**: every committed alarm is mirrored to a
#   key `wake/<YYYY-MM-DDTHH:MM>/<cell>`, and a waker scans the due buckets every
#   `CELLD_WAKER_TICK_MS` (default 60 000). Cells stay resident for `CELLD_ALARM_RESIDENT_MS`
#   (default 1 h).
#
# A keepalive exists for the case where the process died: exactly when the cell is dormant. So on
# celld the fire that matters takes the slow path.
#
# celld's retries differ too (`crates/logic/alarm.rs`): `2000 << min(n, 6)` ms with no jitter,
# 6 counted retries (notebook 2 plotted both ladders).

# %%
import pandas as pd

import alarmkit as ak
from alarmkit.plots import compare, lateness
from alarmkit.widgets import Explorer

# %%
journal = ak.Journal()

# %% [markdown]
# ## One fleet, two runtimes
#
# `keepalive-celld-vs-workerd`: five processors each get a batch, 13 s apart from 5 s, and die
# 300 ms into it, so they are dormant with their keepalive armed 10 s ahead. A sixth (`resident`)
# hits a transient failure and stays up. The scenario runs the fleet on celld, then the same fleet
# on workerd into the same journal.

# %%
fleet = ak.run_scenario("keepalive-celld-vs-workerd", seed=0, journal=journal)

# %%
print("\n".join(fleet["report"]))

# %% [markdown]
# Every dormant cell armed in the first minute waits for the waker's tick at 60 s: the cell armed
# for 15 s fires 45 s late, 4.5 times the rung it was meant to keep. The resident cell fires 2 ms
# late from its timer. The last cell, armed for 67 s, is woken at 60 s because its bucket minute
# (00:01) has begun; the wake loads it, and its own timer fires it on time. On workerd every fire is
# 1 or 2 ms late (the `workerd` profile's lateness: seeded draws from 300 fires measured on local
# workerd).

# %%
pd.DataFrame(fleet["celld"])

# %%
assert fleet["max_late_ms"] == {"celld": 45_002, "workerd": 2}

# %% [markdown]
# The bucket traffic, from the journal: one write per arm (an entry at the same or an earlier
# minute covers a new arm, so re-arming later costs no write), the waker's `wake` rows at 60 s, and
# the deletes once each consumed alarm has committed.

# %%
journal.sql("""
    SELECT t_ms, object_id, kind,
           json_extract_string(detail, '$.op')        AS op,
           json_extract_string(detail, '$.key')       AS key,
           CAST(json_extract(detail, '$.due_in_ms') AS BIGINT) AS due_in_ms
    FROM events WHERE run_id = ? AND kind IN ('bucket', 'wake') ORDER BY seq
""", fleet.run_id)

# %% [markdown]
# Lateness of every fire, per runtime: fire time minus the time it was armed for.

# %%
lateness({"celld": journal.events(fleet.run_id), "workerd": journal.events(fleet["compare_run_id"])})

# %% [markdown]
# `ak.diff` does the comparison instead of the eye: it pairs each arm and fire of one runtime with
# its counterpart in the other, per cell and per alarm, and names what differs. Nothing is missing
# on celld: every fire comes, only late, and the keepalive each late handler re-arms is later too.

# %%
fleet_diff = ak.diff(fleet["compare_run_id"], fleet.run_id, journal=journal, names=("workerd", "celld"))

# %%
print(fleet_diff.summary())

# %%
fleet_diff.figure()

# %% [markdown]
# The same two runs as timelines, one above the other:

# %%
compare({"celld": journal.events(fleet.run_id), "workerd": journal.events(fleet["compare_run_id"])},
        kinds=["arm", "evict", "fire", "handler_ok", "handler_error"], title="the keepalive fleet on two runtimes")

# %% [markdown]
# ## What would make celld fit
#
# **A faster waker.** The tick is a setting; a bucket is due from the start of its minute, so a
# tick shorter than the rung wakes the cell early (a spurious wake: the alarm is not due yet), the
# cell becomes resident, and its millisecond timer fires on time. The worst lateness against the
# tick, on celld:

# %%
celld = ak.get_profile("celld")

# %%
{tick: ak.run_scenario("keepalive-celld-vs-workerd", seed=0, profile=celld.replace(waker_tick_ms=tick))["max_late_ms"]["celld"]
 for tick in (60_000, 30_000, 10_000, 5_000)}

# %% [markdown]
# **Residency.** Everything above relied on the surviving cell staying resident (1 h by
# default). With `resident_ms=5000` even that cell goes dormant before its keepalive is due, and
# it too waits for the minute:

# %%
short = ak.run_scenario("keepalive-celld-vs-workerd", seed=0, resident_ms=5_000, journal=journal)

# %%
pd.DataFrame(short["celld"])[["cell", "woken_by", "armed_at_ms", "fired_at_ms", "late_ms", "late_vs_rung"]]

# %% [markdown]
# Neither is free: a 5-second waker scans every bucket twelve times as often, and residency is
# memory. The design question is whether a fire up to a minute late is acceptable
# for a 10 s keepalive; alarmkit makes the answer a number per setting.
#
# ## Try it
#
# The explorer runs the celld side of the fleet. Tick **resident ms** and give a time (unticked is celld's 1 h),
# **spacing ms** or **cells**, and watch the lateness in the events table and the timeline.
#
# Its first run is pinned (`pin=True`; **Pin this run** pins another): each setting you change is
# diffed against it, and the row under the timeline names the first divergence with its virtual
# time and counts the differing events (**diff figure** draws them; **Unpin** stops). With
# `resident ms` ticked at 5000, the resident cell's keepalive fires 38.502 s late instead of 2 ms,
# and the alarm its handler re-arms moves later with it.

# %%
Explorer("keepalive-celld-vs-workerd", journal=journal, pin=True)
