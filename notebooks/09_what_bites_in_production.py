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
# # 9 · What bites in production
#
# Six stories from public issue threads, where users of Durable Object alarms got hurt, replayed
# as built-in scenarios. Each scenario runs the mistake and its fix side by side
# in one simulation, as two objects named `naive` and `fixed` under the same workload, and declares
# what each owes, so `ak.check` shows the loss on one and none on the other.
#
# Each section says where the story comes from and what is **measured** (on real local workerd
# 1.20261117.1 from npm) and what is **modelled from sources alone** (production behaviour that only
# a public thread reports). The scenarios are in `alarmkit/scenarios/pains_code.py` and
# `pains_platform.py`, written with the public API only.

# %%
import alarmkit as ak
from alarmkit.plots import backoff_ladder, compare, timeline

# %%
journal = ak.Journal()

# %% [markdown]
# ## 1 · The clobbered alarm slot
#
# An object has one alarm. Two modules written apart (here, reminders and an idle timeout) each call
# `set_alarm` for their own purpose: the idle timeout moves the reminder's 30 s wake-up to 10
# minutes later when a user joins, and deletes it when the last user leaves. Nothing fails; the
# reminder is never sent. The agents SDK's answer is a schedule table multiplexed onto the one
# alarm (`cf_agents_schedules`: every wish is a row, the alarm is the earliest row, `alarm()` runs
# the due rows and re-arms). Same workload, nothing lost.

# %%
clobbered = ak.run_scenario("prod-clobbered-alarm", journal=journal)

# %%
clobbered["alarm_after"]

# %%
ak.check(clobbered).table()[["object", "key", "due_ms", "done_ms", "status", "why"]]

# %%
timeline(clobbered.events, window=(0, 60_000), title="one alarm, two modules: the reminder's wake-up moved, then deleted")

# %% [markdown]
# ## 2 · Set early, throw later
#
# A reviewer of cloudflare-docs PR 15685 recalled the advice to call `setAlarm()` as late in a
# handler as possible: "if a `setAlarm()` call succeeds early in a handler that later throws an
# exception, the new alarm time effectively suppresses the sequence of automatic retries". workerd's
# scheduler runs the queued alarm instead of the retry (`alarm-scheduler.c++`, REFERENCE.md). Here a
# digest is sent every minute; the mail service is down from 119 to 121 s. The naive handler had
# already queued the next period: period 2 is never sent. The fixed one sends first, then arms, and
# its retry 2.4 s later sends period 2.

# %%
early = ak.run_scenario("prod-set-early-throw-later", journal=journal)

# %%
ak.check(early).table()[["object", "key", "due_ms", "done_ms", "count", "status"]]

# %%
timeline(early.events, window=(110_000, 190_000), title="the failed period: retried by fixed, replaced by naive")

# %% [markdown]
# ## 3 · Runaway internal errors
#
# workerd counts only failures that are the worker's fault against the six retries
# (`alarm-scheduler.h`); a failure that is not (an internal error) is retried forever with the
# backoff capped at 1024 s (`RETRY_BACKOFF_MAX = 9`), and `retryCount` never moves. Here the platform
# fails `runaway`'s alarm every time (`FaultPlan(uncounted="always")`, the scenario's default plan),
# and `counted` beside it throws a bug of its own. The run stops after three days, with `until=`: the
# runaway would not. The `runaway_retries` invariant reports an alarm retried more than
# `max_uncounted_retries` (10: the 10th retry is the first to wait the capped 1024 s) times, and
# what it cost.

# %%
runaway = ak.run_scenario("prod-runaway-internal-errors", journal=journal)

# %%
runaway.events.query("kind == 'fire'").groupby("object_id").size()

# %%
ak.check(runaway).violations

# %%
backoff_ladder(runaway.events)

# %%
timeline(runaway.events, kinds=["fire", "handler_error", "abandoned"], title="three days of an uncounted failure")

# %% [markdown]
# ## 4 · `setAlarm(Date.now())` inside `alarm()`
#
# workerd issue 6866: a handler that re-arms with `setAlarm(Date.now())` "never fires promptly";
# `setAlarm(Date.now() + 1)` chains in both environments. The trouble comes when `Date.now()` in the
# handler is still the alarm's own scheduled time (it started in that millisecond, as most local
# fires do): the "new" alarm is the running one. On local workerd 1.20261117.1 such a chain was
# reported to stall after one run, the alarm stored (`getAlarm()` shows the past time) and never
# fired again (profile `workerd-local`, `rearm_at_now="same-time-unfired"`); a re-run for this
# notebook saw every chain that re-armed a few ms later run, and never caught a handler starting in
# its own millisecond. **From sources**: production keeps it stored and runs it "tens of seconds"
# later "if at all, until the object is next disturbed", according to the reporter; the
# `workerd` profile keeps the documented promise (an alarm at or before now runs in the immediate
# future, `rearm_at_now="fires"`) and does not model that delay. The scenario fires with no latency
# (`fire_latency_ms=0`) so each handler starts in its scheduled millisecond.

# %%
local = ak.run_scenario("prod-rearm-at-now", journal=journal)

# %%
production = ak.run_scenario("prod-rearm-at-now", profile="workerd", journal=journal)

# %%
{"workerd-local": local["status"], "workerd": production["status"]}

# %%
compare({"workerd-local": local.events, "workerd": production.events}, window=(900, 1_100), title="set_alarm(now) inside alarm()")

# %% [markdown]
# One millisecond of fire latency is enough for `now` to be a new time, and the chain runs on
# `workerd-local` too:

# %%
late_start = ak.run_scenario("prod-rearm-at-now", fire_latency_ms=1, journal=journal)

# %%
late_start["status"]

# %% [markdown]
# ## 5 · A stored alarm in the past that never fires
#
# cloudflare-docs issue 18324: "`getAlarm` was returning a days old alarm time, but it wasn't being
# triggered"; opennextjs-cloudflare issue 929: a purge queue that arms "only if no alarm is set"
# then never arms again, and tags pile up. Why the alarm manager lost the alarm is not known, so it
# is **modelled from sources** as a fault: `FaultPlan(forgotten_alarms=[{"at_ms": 1000}])` (the
# scenario's default plan) loses the pending alarm while storage keeps its time. The defensive
# pattern, from both threads, re-arms when the stored alarm is already overdue.

# %%
stale = ak.run_scenario("prod-stale-overdue-alarm", journal=journal)

# %%
stale["alarm_after_second_tag"]

# %%
ak.check(stale).table()[["object", "key", "due_ms", "done_ms", "status", "why"]]

# %%
timeline(stale.events, window=(0, 120_000), title="get_alarm() says 5 s for ever; only the defensive queue re-arms")

# %% [markdown]
# ## 6 · A cold wake loses the object's name
#
# partykit issues 333 and 390: `this.name` throws in `onAlarm()` when the alarm woke the object
# cold, because nothing passed the name in. cloudflare-docs PR 28956 documents `ctx.id.name` inside
# the object, alarm handlers included, since compatibility date 2026-03-15; partykit issue 390 saw it
# missing in alarms under older compatibility dates. **Modelled from sources**: the `workerd`
# profile's `id_name_since="2026-03-15"`. **Measured**: on local workerd 1.20261117.1 the name was
# present in a cold-woken `alarm()` under both compatibility dates tried (`workerd-local`:
# `id_name_since=None`). The fix stores the name on the first request (partykit PR 337).

# %%
old_date = ak.run_scenario("prod-cold-wake-name", journal=journal)

# %%
new_date = ak.run_scenario("prod-cold-wake-name", compatibility_date="2026-03-15", journal=journal)

# %%
ak.check(old_date).table()[["object", "key", "due_ms", "done_ms", "status"]]

# %%
compare({"compat 2026-01-28": old_date.events, "compat 2026-03-15": new_date.events}, title="ctx.id.name on a cold wake")
