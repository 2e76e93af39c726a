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
# # 7 · Querying the journal
#
# Every simulation writes its events to a **journal**: a DuckDB database with two tables.
#
# * `runs(run_id, scenario, profile, seed, params, faults, started_at)`: one row per run;
#   `params` and `faults` are JSON text.
# * `events(run_id, seq, t_ms, namespace, object_id, kind, scheduled_ms, prev_scheduled_ms,
#   retry_count, detail)`: one row per thing that happened, in order (`seq`), at virtual time
#   `t_ms`. `detail` is JSON text whose fields depend on `kind` (an `arm` has `direction` and
#   `cause`, a `fire` has `attempt` and `late_ms`, a `retry_scheduled` has `rung`, `base_ms`,
#   `jitter_ms`, `delay_ms`, `counted`, an `effect` has `name` and `key`).
#
# The plots read nothing else: anything a figure shows, a query can check. This notebook fills a
# journal file, asks it questions in SQL and in pandas, and writes HTML reports.

# %%
import json
import os
from pathlib import Path

import duckdb
import pandas as pd

import alarmkit as ak
from alarmkit.plots import lateness, timeline
from alarmkit.report import export_html, export_run

# %% [markdown]
# Outputs go to `out/` beside the notebook (git ignores it), or wherever `ALARMKIT_OUT` points
# (CI points it at a temporary folder).

# %%
OUT = Path(os.environ.get("ALARMKIT_OUT", "out"))

# %%
OUT.mkdir(parents=True, exist_ok=True)

# %%
DB = OUT / "journal.duckdb"

# %% [markdown]
# Start from an empty file each time the notebook runs.

# %%
DB.unlink(missing_ok=True)

# %%
journal = ak.Journal(DB)

# %% [markdown]
# ## Fill it
#
# Every built-in scenario once, with seed 1; then the crash-after-effect lab with many seeds,
# so there is a distribution to query.

# %%
SEEDS = range(5) if os.environ.get("ALARMKIT_CI") else range(40)

# %%
for sc in ak.list_scenarios():
    ak.run_scenario(sc.name, seed=1, journal=journal)

# %%
for seed in SEEDS:
    ak.run_scenario("lease-crash-after-effect", seed=seed, journal=journal)

# %%
journal.runs()

# %% [markdown]
# ## SQL
#
# `journal.sql(query, *params)` runs DuckDB SQL and returns a pandas DataFrame. What happened,
# by kind, over all runs:

# %%
journal.sql("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC")

# %% [markdown]
# One line per run: attempts, retries, abandonments, revivals and effects. `FILTER` counts a
# subset inside one aggregate; `GROUP BY ALL` groups by every column that is not aggregated.

# %%
journal.sql("""
    SELECT r.run_id, r.scenario, r.profile,
           count(*) FILTER (WHERE e.kind = 'fire')                       AS attempts,
           count(*) FILTER (WHERE e.kind = 'fire' AND e.retry_count > 0) AS retries,
           count(*) FILTER (WHERE e.kind = 'abandoned')                  AS abandoned,
           count(*) FILTER (WHERE e.kind = 'revive')                     AS revivals,
           count(*) FILTER (WHERE e.kind = 'effect')                     AS effects,
           max(e.t_ms)                                                   AS last_event_ms
    FROM runs r JOIN events e USING (run_id)
    WHERE r.seed = 1
    GROUP BY ALL ORDER BY r.run_id
""")

# %% [markdown]
# ### Duplicate effects
#
# At-least-once means an effect can run twice. An effect is identified by its `name` and `key`
# inside one run; `json_extract_string` reads them from `detail`. Every row below is a repeat
# that the effect had to tolerate.

# %%
duplicates = journal.sql("""
    SELECT e.run_id, r.scenario, e.object_id,
           json_extract_string(e.detail, '$.name') AS effect,
           json_extract_string(e.detail, '$.key')  AS key,
           count(*)                                AS times,
           list(e.t_ms ORDER BY e.seq)             AS at_ms
    FROM events e JOIN runs r USING (run_id)
    WHERE e.kind = 'effect'
    GROUP BY ALL HAVING count(*) > 1
    ORDER BY e.run_id
""")

# %%
duplicates

# %% [markdown]
# The crash-after-effect result from local workerd: "the platform retried about two seconds later with
# retryCount=1, ran the effect again". How long after the first run did the repeat come, over
# all seeds? The second run must wait the first rung, 2 000 ms plus up to 500 ms of jitter.
# Query the `duplicates` DataFrame itself with DuckDB:

# %%
gaps = duckdb.sql("""
    SELECT run_id, at_ms[2] - at_ms[1] AS repeat_after_ms
    FROM duplicates
    WHERE scenario = 'lease-crash-after-effect'
""").df()

# %%
gaps["repeat_after_ms"].describe()

# %%
assert gaps["repeat_after_ms"].between(2_000, 2_500).all()

# %% [markdown]
# That query ran on the DataFrame, not on the journal: `duckdb.sql` reads a pandas DataFrame in
# the notebook by its variable name, as if it were a table (a *replacement scan*; Arrow tables and
# Polars frames work too). `list(... ORDER BY ...)` made `at_ms` a list, indexed from 1.
#
# ### Window functions: time between attempts
#
# `LAG` looks at the previous row of the same partition. Here: for each `alarm()` attempt, the
# wait since the previous attempt of the same object in the same run.

# %%
journal.sql("""
    SELECT run_id, object_id, retry_count, t_ms,
           t_ms - lag(t_ms) OVER (PARTITION BY run_id, object_id ORDER BY seq) AS since_previous_ms
    FROM events
    WHERE kind = 'fire' AND run_id = (SELECT min(run_id) FROM runs WHERE scenario = 'lease-exhaustion')
    ORDER BY seq
""")

# %% [markdown]
# ### Lateness by profile
#
# A `fire`'s `detail.late_ms` is how long after its `scheduled_ms` it ran. For first attempts
# (`retry_count = 0`) that is pure delivery delay: a few ms on the `workerd` profile, but up to most
# of a minute when celld wakes a dormant cell from a minute bucket (notebook 6).

# %%
journal.sql("""
    SELECT r.profile, count(*) AS first_attempts,
           min(CAST(json_extract(e.detail, '$.late_ms') AS BIGINT))    AS min_late_ms,
           median(CAST(json_extract(e.detail, '$.late_ms') AS BIGINT)) AS median_late_ms,
           max(CAST(json_extract(e.detail, '$.late_ms') AS BIGINT))    AS max_late_ms
    FROM events e JOIN runs r USING (run_id)
    WHERE e.kind = 'fire' AND e.retry_count = 0
    GROUP BY ALL ORDER BY r.profile
""")

# %% [markdown]
# ## pandas
#
# `journal.events()` (all runs) or `journal.events(run_id)` returns a DataFrame with nullable
# integer columns. Join the runs to name them, and spread `detail` into columns with
# `json.loads` (never `eval`) and `pd.json_normalize`.

# %%
events = journal.events().merge(journal.runs()[["run_id", "scenario", "profile"]], on="run_id")

# %%
events.pivot_table(index="scenario", columns="kind", values="seq", aggfunc="count", fill_value=0)

# %%
retries = events[events["kind"] == "retry_scheduled"].reset_index(drop=True)

# %%
retries = retries.join(pd.json_normalize(retries["detail"].map(json.loads).tolist()))

# %%
retries.groupby(["profile", "rung"])["delay_ms"].agg(["count", "min", "max"])

# %% [markdown]
# ## Figures from queries
#
# The plotting functions take any events frame with the journal's columns: one run, many runs,
# or a slice. `lateness` with `runs=` groups the fires by profile.

# %%
lateness(journal.events(), runs=journal.runs(), by="profile")

# %%
revival_run = int(journal.sql("SELECT min(run_id) AS id FROM runs WHERE scenario = 'lease-revival'")["id"][0])

# %%
timeline(journal.events(revival_run), kinds=["fire", "handler_error", "abandoned", "restart", "revive", "effect"],
         title="lease-revival: attempts, abandonment, restart, revival")

# %% [markdown]
# ## Reports
#
# `export_run` writes one run as a single HTML file: a summary table and the timeline, backoff
# ladder and lateness figures, with plotly.js inlined. It opens offline and loads nothing from
# the network. `export_html` does the same for any list of figures.

# %%
report = export_run(journal, revival_run, OUT / "lease-revival.html")

# %%
report, f"{report.stat().st_size / 1e6:.1f} MB"

# %%
custom = export_html([lateness(journal.events(), runs=journal.runs(), by="profile")], OUT / "lateness.html",
                     title="lateness of fires, by profile")

# %%
custom

# %% [markdown]
# ## Outside the notebook
#
# DuckDB writes Parquet directly, for any other tool:

# %%
journal.sql(f"COPY (SELECT * FROM events) TO '{OUT / 'events.parquet'}' (FORMAT parquet)")

# %%
pd.read_parquet(OUT / "events.parquet").shape

# %% [markdown]
# A DuckDB file can be open for writing in only one process. Close the journal before the
# command line uses it: `alarmkit export --db out/journal.duckdb --run 5 --out run-5.html`
# writes the same report as `export_run` above. (If you forget, the error names the process
# that holds the file.)

# %%
journal.close()
