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
# # 10 · Your own Python Worker
#
# A Durable Object written for Cloudflare Python Workers, loaded unchanged: `notebooks/workers/outbox.py`
# imports `workers`, `time` and nothing of alarmkit, and its `wrangler.jsonc` is the one `wrangler deploy`
# reads. Messages sent to the outbox are kept in storage and delivered to an inbox object in batches, one
# second after the first message of a batch. Under alarmkit its alarms run on the virtual clock, every
# arm and fire is journaled, and the explorer crashes it at every await to look for lost messages.
# The host and what it supports (and refuses) are in `docs/workers.md`.

# %%
import os
from pathlib import Path

import alarmkit as ak
from alarmkit.plots import compare, timeline
from alarmkit.workers import example, explore_worker, run_worker

# %%
OUT = Path(os.environ.get("ALARMKIT_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# The worker, as Cloudflare runs it. Note the order in `alarm()`: the batch leaves storage before the
# inbox has it.

# %%
print(example("outbox.py").read_text())

# %% [markdown]
# ## Load it and drive it by hand
#
# `sim.load_worker` reads the Durable Object bindings and the compatibility date from the wrangler file.
# `w.fetch` goes through the worker's `Default` entrypoint; `w.env.OUTBOX.getByName(...)` is a stub whose
# RPC methods `sim.call` drives, as for any alarmkit object.

# %%
sim = ak.Simulation(seed=0)

# %%
w = sim.load_worker(wrangler=example("wrangler.jsonc"))

# %%
w.fetch("/send", method="POST", body='{"to": "alice", "id": "m1", "text": "hello"}').json()

# %%
sim.call(w.env.OUTBOX.getByName("alice").send("m2", "how are you"))

# %%
sim.run()

# %%
sim.call(w.env.INBOX.getByName("inbox").messages())

# %%
sim.events()[["t_ms", "object_id", "kind", "scheduled_ms", "retry_count"]]

# %% [markdown]
# ## Its alarms on the timeline
#
# `drive.json` sends three messages at 0, 0.3 and 5 s, each from a client that tries again 100 ms after
# a failure, and states what must hold at the end: the inbox has all three messages.

# %%
journal = ak.Journal()

# %%
run = run_worker(None, example("drive.json"), wrangler=example("wrangler.jsonc"), journal=journal)

# %%
run["expect_failures"]

# %%
timeline(run.events, title="the outbox: a batch one second after its first message")

# %% [markdown]
# ## A bug, found by the explorer
#
# `explore_worker` runs the drive again with a crash injected at every await reached in the fault-free
# run, in every object, and checks the drive's expectations after each (the `expect` invariant). A
# crash of the inbox while it stores a batch fails the outbox's `alarm()`; workerd retries it two
# seconds later, but the batch was already deleted: the messages are lost.

# %%
found = explore_worker(example("outbox.py"), example("drive.json"), wrangler=example("wrangler.jsonc"),
                       seeds=0, workers=1)

# %%
print(found.report())

# %% [markdown]
# ## The fix, under the same fault
#
# `outbox_fixed.py` deletes a batch only once the inbox has it (the inbox ignores a message it already
# has, so a batch delivered twice is harmless), and keeps what arrived meanwhile. The counterexample's
# plan replays on both.

# %%
plan = found.counterexamples[0].plan

# %%
broken = run_worker(example("outbox.py"), example("drive.json"), wrangler=example("wrangler.jsonc"), faults=plan,
                    journal=journal)

# %%
fixed = run_worker(example("outbox_fixed.py"), example("drive.json"), wrangler=example("wrangler.jsonc"),
                   faults=plan, journal=journal)

# %%
{"broken": broken["expect_failures"], "fixed": fixed["expect_failures"]}

# %%
compare({"broken outbox": broken.events, "fixed outbox": fixed.events}, title="the same crash, before and after the fix")

# %% [markdown]
# And the whole search on the fix: no crash point loses a message.

# %%
print(explore_worker(example("outbox_fixed.py"), example("drive.json"), wrangler=example("wrangler.jsonc"),
                     seeds=0, workers=1).report())

# %% [markdown]
# Random fault plans (`seeds=20`) find one more way to lose the messages, in both versions: an `alarm()`
# that fails seven times in a row is abandoned (workerd's retry limit), and nothing wakes the outbox
# again until a new message arrives. That one is the platform's rule, not this code's mistake; the
# answer is a client or a cron that sends again (notebook 2 shows the ladder and the revival).
