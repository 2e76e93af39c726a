"""The local process pool  and what explore does when it is stopped .

Each case runs in its own Python process under a timeout, so a hang fails the test instead of
wedging pytest: background threads doing native work, then explore() on the default pool several
times (in a script and in a real Jupyter kernel); Ctrl-C and kill -9 of the real console script.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
CLI = [sys.executable, "-m", "alarmkit"]

# native work in three threads, as a notebook with numpy, pyarrow and DuckDB has it
THREADS = """
import threading
import duckdb, numpy as np, pyarrow as pa

stop = threading.Event()

def numpy_loop():
    a = np.random.default_rng(0).random((150, 150))
    while not stop.is_set():
        a = a @ a
        a /= np.abs(a).max()

def arrow_loop():
    while not stop.is_set():
        pa.array(list(range(5_000)))

def duckdb_loop():
    con = duckdb.connect()
    while not stop.is_set():
        con.execute("SELECT sum(i * i) FROM range(200000) t(i)").fetchone()

def start_threads():
    for f in (numpy_loop, arrow_loop, duckdb_loop):
        threading.Thread(target=f, daemon=True).start()
"""

SCRIPT = THREADS + """
import os
import alarmkit as ak
from alarmkit.explore import _pool

forks = []
os.register_at_fork(before=lambda: forks.append(1))  # any os.fork() of this process

def main():
    start_threads()
    serial = ak.explore("lease-ledger", seeds=60, depth=1, workers=1, progress=False)
    pools = []
    for _ in range(4):
        r = ak.explore("lease-ledger", seeds=60, depth=1, workers=2, progress=False)
        assert r.table.equals(serial.table), "the pool's table differs from one process's"
        pools.append(id(_pool._shared["pool"]))
    stop.set()
    print(json.dumps({"runs": r.runs, "pools": len(set(pools)), "forks": len(forks),
                      "method": _pool._shared["pool"]._mp_context.get_start_method()}))

if __name__ == "__main__":
    import json
    main()
"""


def _run(code: str, tmp_path: Path, timeout: int) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    try:
        return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=ENV, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"explore hung (killed after {timeout} s); output so far: {err.stdout!r} {err.stderr!r}")


@pytest.mark.slow
def test_explore_on_the_default_pool_beside_busy_native_threads_never_hangs(tmp_path):
    out = _run(SCRIPT, tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "BrokenProcessPool" not in out.stderr
    got = json.loads(next(ln for ln in out.stdout.splitlines() if ln.startswith('{"runs"')))
    # four calls, one pool (its start-up paid once), spawned: this process never forked
    assert got == {"runs": 92, "pools": 1, "forks": 0, "method": "spawn"}


@pytest.mark.slow
def test_explore_on_the_default_pool_in_a_jupyter_kernel_with_busy_threads(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [THREADS + "\nstart_threads()", "import os, sys\nsys.path.insert(0, os.environ['ALARMKIT_ROOT'])\nimport alarmkit as ak"]
    cells += ["r = ak.explore('lease-ledger', seeds=60, depth=1, workers=2, progress=False)\nassert r.ok and r.runs == 92"
              for _ in range(3)]
    cells += ["from alarmkit.explore import _pool\nassert _pool._shared['pool']._mp_context.get_start_method() == 'spawn'",
              "stop.set()"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    os.environ["ALARMKIT_ROOT"] = str(ROOT)  # the kernel inherits it
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=240,
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()  # a hung cell raises a timeout here, never waits forever
    except Exception as err:  # noqa: BLE001 - CellExecutionError, or the cell timeout
        pytest.fail(f"{type(err).__name__}: {str(err)[:4000]}", pytrace=False)
    finally:
        os.environ.pop("ALARMKIT_ROOT", None)
    assert all(c.execution_count for c in nb.cells)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_long_explore(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    db = tmp_path / "j.duckdb"
    proc = subprocess.Popen([*CLI, "explore", "lease-ledger", "--seeds", "200000", "--depth", "1",
                             "--workers", "2", "--db", str(db), "--out", str(tmp_path / "runs")],
                            cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait for the workers, and for some runs in the journal's folder
        if len(_descendants(proc.pid)) >= 2 and len(list((tmp_path / "runs").glob("*/runs-01-*.parquet"))) >= 2:
            return proc, db
        if proc.poll() is not None:
            pytest.fail(f"explore exited early: {proc.communicate()}")
        time.sleep(0.2)
    proc.kill()
    pytest.fail("explore did not start its workers within 120 s")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_explore_leaves_no_worker_and_keeps_the_finished_runs(tmp_path):
    from alarmkit import Journal

    proc, db = _start_long_explore(tmp_path)
    workers = _descendants(proc.pid)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)], "workers outlived their parent"
    with Journal(db) as j:  # DuckDB replays its write-ahead log: the chunks written before the kill
        runs = j.runs()
        events = j.sql("SELECT count(DISTINCT run_id) AS n FROM events")["n"][0]
    # every run but the one the kill may have cut short says it is complete, and has its events
    assert len(runs) > 0 and runs["complete"].sum() >= len(runs) - 1 and events >= runs["complete"].sum()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_cancels_the_queue_keeps_what_finished_prints_one_line_and_exits_130(tmp_path):
    from alarmkit import Journal

    proc, db = _start_long_explore(tmp_path)
    workers = _descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"explore did not stop within 120 s of Ctrl-C: {proc.communicate()}")
    assert proc.returncode == 130, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.strip() and not re.match(r"^lease-ledger wave \d+: ", ln)]  # tqdm
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    said = re.fullmatch(r"alarmkit: explore lease-ledger interrupted: ([\d,]+) finished (runs?) kept in journal .*; "
                        r"queued runs cancelled", lines[0])
    assert said, lines[0]
    kept = int(said[1].replace(",", ""))
    assert said[2] == ("run" if kept == 1 else "runs")
    with Journal(db) as j:
        runs = j.runs()
    assert len(runs) == kept > 0 and runs["complete"].all()  # whole runs only: Ctrl-C waited for each
    assert not [p for p in workers if _alive(p)]
