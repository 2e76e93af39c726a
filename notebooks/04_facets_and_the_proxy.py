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
# # 4 · Facets and the parent-owned alarm proxy
#
# A **facet** is a child Durable Object that lives inside its parent (`ctx.facets.get(name, cls)`):
# its own SQLite file, its own code, the parent's process. A stream processor can be hosted this
# way, and the processor's keepalive needs a durable alarm. Facets cannot have one. From workerd's
# source (`server.c++`, `actor-sqlite.c++`): the alarm scheduler keys alarms by actor, and it can
# deliver only to the **root** actor of a namespace.
#
# How the failure shows depends on the workerd version, and both are nasty because `setAlarm()`
# *seems to succeed*:
#
# | profile | what happens |
# | --- | --- |
# | `workerd-2026-07` (before PR #7085) | the write commits through the output gate and throws there, `alarms are not yet implemented for SQLite-backed Durable Objects`, breaking **unrelated in-flight RPCs on the whole actor** (workerd#6810) |
# | `workerd` (1.20261117.1) | `setAlarm()` resolves and `getAlarm()` even shows the time; the commit breaks **the facet**: every pending or later call into it rejects with `Facets currently cannot set alarms.`; the parent's own work completes |
#
# The fix that shipped (option 1, the shape Cloudflare's agents SDK uses): the **parent owns
# the one real alarm**. The facet calls `setAlarm` on its parent; the parent persists one
# `{atMs, ref}` cell, mirrors it into its real alarm, and on fire boots the facet from the stored
# ref and replays `alarm(info)` into it. Failures re-raise, so workerd's root-actor retries cover
# delivery.

# %%
import inspect

import pandas as pd

import alarmkit as ak
from alarmkit.facets import AlarmProxyParent
from alarmkit.plots import compare, timeline
from alarmkit.scenarios.keepalive import GuestbookFacetApp, GuestbookProxyApp
from alarmkit.widgets import Explorer

# %%
journal = ak.Journal()

# %% [markdown]
# ## The parent that hosts the processor as a plain facet
#
# `deliver` forwards a batch to the processor facet; `visit` is the parent's own work (a write,
# 500 ms of waiting, a write), unrelated to the facet.

# %%
print(inspect.getsource(GuestbookFacetApp.processor))

# %% [markdown]
# ## Failure mode 1: today's workerd breaks the facet
#
# At 0.9 s the parent starts a `visit`; at 1 s and again at 3 s the stream delivers a batch. The
# processor's first act is to arm its keepalive (`set_alarm`), and that write's commit fails.

# %%
today = ak.run_scenario("guestbook-facet", seed=0, journal=journal)

# %%
pd.DataFrame(today["calls"])

# %% [markdown]
# Both deliveries reject with `Facets currently cannot set alarms.`; the parent's `visit` returns
# normally. Nothing was signed and no alarm is kept: getting the facet again gives a fresh instance
# whose `get_alarm()` is null. The journal's `facet_broken` rows name the requested alarm time and
# the calls that failed with it.

# %%
pd.DataFrame(today["broken"])[["t_ms", "kind", "object_id", "message", "calls"]]

# %%
today["signed"], today["final_alarm"]

# %% [markdown]
# ## Failure mode 2: before PR #7085 the whole actor broke
#
# The same run under the `workerd-2026-07` profile. Now the failing commit takes down the actor:
# the parent's `visit`, which never touched an alarm, fails too. This is the report in workerd#6810:
# "a facet's `setAlarm()` seems to succeed, then an unrelated RPC fails".

# %%
before = ak.run_scenario("guestbook-facet", seed=0, profile="workerd-2026-07", journal=journal)

# %%
pd.DataFrame(before["calls"])

# %%
pd.DataFrame(before["broken"])[["t_ms", "kind", "object_id", "message", "calls"]]

# %% [markdown]
# As a field report put it: "Every delivery then fails with 'alarms are not yet implemented for SQLite-backed
# Durable Objects' — proven live on PR #2073 (the recovery wiring was written, failed on first
# delivery, and reverted)."
#
# ## The fix: the parent-owned alarm proxy
#
# `AlarmProxyParent` is a root object. Its verbs `set_alarm(ref, at_ms)` and `get_alarm(ref)` are
# what the facet calls; its `alarm()` is the only real alarm, and it replays the fire into the facet.

# %%
print(inspect.getsource(AlarmProxyParent.alarm))

# %% [markdown]
# The facet keeps the standard API: its constructor wraps `ctx` in `facet_alarm_state(ctx, ref)`, a
# `DurableObjectState`-shaped shim whose storage stays the facet's own but whose alarm calls are
# RPCs to the parent. The keepalive code is unchanged, exactly as planned ("zero registry
# changes").

# %%
GuestbookProxyApp.FACET_CLASSES

# %% [markdown]
# The proxied guestbook: the parent's process dies 500 ms into a five-entry batch (the facet dies
# with it). The proxy cell and the real alarm are in the parent's storage, so they survive. At
# 11.002 s the parent's alarm fires, boots a fresh facet from the stored ref, replays the fire, and
# the keepalive revives the processor.

# %%
proxied = ak.run_scenario("guestbook-facet-proxy", seed=0, journal=journal)

# %%
print("\n".join(proxied["report"]))

# %%
pd.DataFrame(proxied["proxy"])

# %%
assert proxied["signed"] == [0, 1, 2, 3, 4] and proxied["revivals"] == 1

# %% [markdown]
# A whole-runtime restart instead of an eviction: on startup workerd reloads every stored alarm,
# the parent's among them, and the same revival happens.

# %%
restarted = ak.run_scenario("guestbook-facet-proxy", seed=0, outage="restart", journal=journal)

# %%
print("\n".join(restarted["report"]))

# %% [markdown]
# ## Side by side
#
# The three hostings on one time axis: the facet that broke (nothing happens after 3 s), and the
# proxy whose parent alarm (lane `app`) delivers the keepalive fire into the facet (lane
# `app/guestbook`).

# %%
compare({"facet (workerd)": journal.events(today.run_id),
         "facet (workerd-2026-07)": journal.events(before.run_id),
         "facet behind the proxy": journal.events(proxied.run_id)}, title="one processor, three hostings")

# %%
timeline(journal.events(proxied.run_id), title="guestbook-facet-proxy: the parent's alarm revives the facet")

# %% [markdown]
# ## Try it
#
# The explorer runs the plain-facet scenario. Switch **profile** between `workerd` and
# `workerd-2026-07` and watch the parent's `visit` survive or fail (the events table); move
# **visit at** after the deliveries (e.g. `4000`) and it survives both. (celld has no facets at all:
# `ctx.facets` is not defined there, and the scenario refuses that profile.)

# %%
Explorer("guestbook-facet", journal=journal)
