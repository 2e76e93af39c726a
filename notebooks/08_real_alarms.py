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
# # 8 · Real alarms: import, record, compare with the model
#
# The other notebooks show what alarmkit's model of a Durable Object does. This one reads what a
# real one did. Three runs of the lease ledger (`alarmkit/realruns/js/lab/lease.js`, wrapped by
# `recorded.js`) were recorded on real local workerd 1.20261117.1 from npm with a tail worker, and
# committed under `data/real-runs/` with the script that recorded them:
#
# * `lease-normal`: two leases (300 ms, 1500 ms), one fire each;
# * `lease-crash-after-effect`: the revoke throws once after its effect, so the retry repeats it;
# * `lease-exhaustion`: `alarm()` always throws: seven runs, then workerd gives up (~145 s real time).
#
# Each has `tail.jsonl` (the TraceItems a `tail()` handler received), `stream.jsonl` (streaming tail
# events) and `logpush.jsonl` (built from the tail events field by field: Logpush needs Cloudflare's
# network, so it could not be recorded here). No workerd is needed to run this notebook.

# %%
import os
from pathlib import Path

import alarmkit as ak
from alarmkit.plots import compare, lateness, timeline
from alarmkit.realruns import differences, export_comparison, export_perfetto, fixture, import_file, since_start
from alarmkit.report import export_run

# %%
OUT = Path(os.environ.get("ALARMKIT_OUT", "out"))

# %%
OUT.mkdir(parents=True, exist_ok=True)

# %%
journal = ak.Journal(OUT / "real-alarms.duckdb")

# %% [markdown]
# ## Import: what did my alarms do?
#
# `import_file` (the CLI's `alarmkit import FILE --db J`) reads the trace, writes one run and
# prints a summary with the anomalies it found: late fires, retries, ladders exhausted (seven
# failures, then silence), duplicate fires for one scheduled time, arms with no fire by their time
# plus a minute. Every anomaly names its object and its wall-clock time.

# %%
exhaustion = import_file(fixture("lease-exhaustion", "tail"), journal)

# %%
print(exhaustion.report())

# %% [markdown]
# Imported times stay epoch milliseconds. The timeline counts from the run's first event:

# %%
timeline(since_start(journal.events(exhaustion.run_id)), title="lease-exhaustion on real workerd")

# %% [markdown]
# The same run from Logpush. Its published fields have no Durable Object id; here the recorder's
# log lines (kept in `Logs`) still name the object. The summary says what the format could not tell.

# %%
print(import_file(fixture("lease-exhaustion", "logpush"), journal).report())

# %% [markdown]
# And from the streaming tail. On this workerd the streams of the three attempts that ran in a
# freshly constructed object (evicted while it waited) stop after the constructor's log line:
# the importer makes no outcome up and does not claim the ladder ran out.

# %%
print(import_file(fixture("lease-exhaustion", "stream"), journal).report())

# %% [markdown]
# The report of an imported run lists its anomalies beside the figures:

# %%
export_run(journal, exhaustion.run_id, OUT / "real-exhaustion.html")

# %% [markdown]
# ## Record: your own class, on workerd
#
# `alarmkit record --worker worker.js --class Ledger --script drive.json --db J` wraps the class
# with `recorded.js`, starts local workerd with alarmkit's tail worker, drives it, and writes a run
# like the one above, plus the obligations the script declares, for `check_run`. It needs workerd
# (`alarmkit calibrate --install-only`), so this notebook reads the committed recordings instead;
# `data/real-runs/record_fixtures.py` is the script that made them and `docs/real-runs.md` shows
# the three lines a JavaScript developer adds.
#
# ## Real against simulated
#
# The crash-after-effect run beside the simulator's `lease-crash-after-effect`, both counted from
# their first request:

# %%
crash = import_file(fixture("lease-crash-after-effect", "tail"), journal)

# %%
simulated = ak.run_scenario("lease-crash-after-effect", journal=journal)

# %%
compare({"real workerd": journal.events(crash.run_id), "simulated": journal.events(simulated.run_id)}, align="first_request")

# %%
differences(journal.events(crash.run_id), journal.events(simulated.run_id))

# %% [markdown]
# Nothing differs beyond 250 ms: one failed run whose effect had already happened, the retry about
# 2.4 s later, the revoke done twice. The exhaustion, simulated with the same 500 ms lease, differs
# only where the 25 % jitter falls:

# %%
simulated_exhaustion = ak.run_scenario("lease-exhaustion", journal=journal, ttl=500)

# %%
differences(journal.events(exhaustion.run_id), journal.events(simulated_exhaustion.run_id))

# %%
lateness({"real workerd": journal.events(exhaustion.run_id), "simulated": journal.events(simulated_exhaustion.run_id)})

# %%
export_comparison(journal, exhaustion.run_id, simulated_exhaustion.run_id, OUT / "real-vs-simulated.html")

# %% [markdown]
# ## Perfetto
#
# Any run, real or simulated, opens in Perfetto UI (ui.perfetto.dev → Open trace file): one track
# per object, each `alarm()` a slice, arrows from each arm to the fire it caused.

# %%
export_perfetto(journal, [exhaustion.run_id], OUT / "real-exhaustion.perfetto.json")

# %%
journal.close()
