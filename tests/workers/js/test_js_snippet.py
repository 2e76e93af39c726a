"""explore's replay snippet of a scenario alarmkit registers outside ``import alarmkit`` (the JS
lease ledger of notebook 11) imports the module that registers it, and runs in a fresh process."""

import subprocess
import sys
from pathlib import Path

import alarmkit as ak
from alarmkit.explore._shrink import snippet
from alarmkit.scenarios import SCENARIOS

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


def test_the_snippet_imports_what_registers_the_scenario():
    # in a child: importing alarmkit.workers.js.scenarios here would register its scenarios in this
    # process, beside the built-ins other tests count
    out = subprocess.run([sys.executable, "-c", "import alarmkit.workers.js.scenarios\n"
                          "from alarmkit.scenarios import SCENARIOS\nprint(SCENARIOS['js-leases'].replay_setup())"],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout == "import alarmkit.workers.js.scenarios  # registers scenario 'js-leases'\n", out.stderr
    assert SCENARIOS["lease-ledger"].replay_setup() == ""


def test_the_js_leases_snippet_runs_in_a_fresh_process(js_host):
    text = snippet("js-leases", ak.FaultPlan.from_dict({}), seed=0,
                   setup="import alarmkit.workers.js.scenarios  # registers scenario 'js-leases'")
    out = subprocess.run([sys.executable, "-c", text], cwd=NOTEBOOKS, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stderr == "", out.stderr  # it was "ScenarioError: unknown scenario 'js-leases'"
    assert out.stdout == ""  # fault-free, the ledger revokes both leases: no violation to print
