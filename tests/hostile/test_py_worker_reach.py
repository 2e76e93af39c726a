"""The other doors from a Python Worker's code to the process (alarmkit/workers/python/_reach.py, and the
``fork_exec`` event of _contain.py), one hostile worker each: the process's ``os`` or ``posix`` reached
under another name (``import posix``, ``importlib.import_module``, ``__import__``, ``sys.modules``,
``os.path.os``), ``importlib.reload``, a SQLite extension, ``weakref.finalize``, the collector's and the
threads' settings, ``multiprocessing``'s spawn, and ``import alarmkit``. Each is refused at the call with a
one-line ``WorkerUnsupported`` naming the call and the worker's line; nothing is made on disk, no process
starts, nothing reaches the real stdout. Then what answers instead of refusing: ``os.path.expanduser``,
``hasattr`` of a refused member, ``js.Date.new``, ``asyncio.sleep`` of NaN and infinity, ``sys.stdout.buffer``."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

import alarmkit as ak

FILE = "a file written outside the simulation, which alarmkit does not do"
PROCESS = "a process leaves the simulation, which alarmkit does not do"
SETTINGS = "it changes the process every object and alarmkit share (its collector, its threads' trace, profile"
OWN = "the simulation's own internals are not the worker's to reach (a Worker on workerd has no alarmkit)"
EXIT = "it ends at once the process every object and alarmkit share"

CASES = {  # the worker's code (TARGET: a path in the test's folder) -> the refusal's start, its reason
    "posix_mkfifo": ("import posix\nposix.mkfifo(TARGET)", "posix.mkfifo('{t}')", FILE),
    "posix_mknod": ("import posix, stat\nposix.mknod(TARGET, stat.S_IFREG | 0o600)", "posix.mknod('{t}', 33152)", FILE),
    "posix_system": ("import posix\nposix.system('touch ' + TARGET)", "os.system(b'touch {t}')", PROCESS),
    "posix_open": ("import posix\nposix.open(TARGET, posix.O_WRONLY | posix.O_CREAT)", "open('{t}', None, ", FILE),
    "posix_exit": ("import posix\nposix._exit(3)", "posix._exit(3)", EXIT),
    "import_module_posix": ("import importlib\nimportlib.import_module('posix').mkfifo(TARGET)", "posix.mkfifo('{t}')", FILE),
    "import_module_os": ("import importlib\nimportlib.import_module('os').mkfifo(TARGET)", "os.mkfifo('{t}')", FILE),
    "import_module_os_environ": ("import importlib\nimportlib.import_module('os').environ['K'] = TARGET",
                                 "os.putenv('K', '{t}')", "it changes the process every object and alarmkit share"),
    "dunder_import": ("__import__('os').mkfifo(TARGET)", "os.mkfifo('{t}')", FILE),
    "importlib_dunder_import": ("import importlib\nimportlib.__import__('posix').mkfifo(TARGET)", "posix.mkfifo('{t}')", FILE),
    "sys_modules_posix": ("import sys\nsys.modules['posix'].mkfifo(TARGET)", "posix.mkfifo('{t}')", FILE),
    "sys_modules_importlib": ("import sys\nsys.modules['importlib'].import_module('os').mkfifo(TARGET)", "os.mkfifo('{t}')", FILE),
    "os_path_os": ("import os\nos.path.os.mkfifo(TARGET)", "os.mkfifo('{t}')", FILE),
    "posixpath_os": ("import posixpath\nposixpath.os.umask(0)", "os.umask(0)", "it changes the process"),
    "reload_stdlib": ("import importlib, json\nimportlib.reload(json)", "importlib.reload(<module 'json'",
                      "that module is the process's one copy, shared by every object and alarmkit"),
    "sqlite_enable_extension": ("import sqlite3\nsqlite3.connect(':memory:').enable_load_extension(True)",
                                "sqlite3.Connection.enable_load_extension", "an extension is a native library"),
    "sqlite_load_extension": ("import sqlite3\nsqlite3.connect(':memory:').load_extension(TARGET)",
                              "sqlite3.Connection.load_extension", "an extension is a native library"),
    "weakref_finalize": ("import weakref\nclass Box: pass\nKEEP.append(Box())\nweakref.finalize(KEEP[-1], open, TARGET, 'w')",
                         "weakref.finalize(<", "its callback runs when the object is collected or at the process's exit"),
    "atexit_run": ("import atexit\natexit._run_exitfuncs()", "atexit._run_exitfuncs()", "the process's exit callbacks"),
    "gc_disable": ("import gc\ngc.disable()", "gc.disable()", SETTINGS),
    "gc_set_threshold": ("import gc\ngc.set_threshold(1)", "gc.set_threshold(1)", SETTINGS),
    "gc_freeze": ("import gc\ngc.freeze()", "gc.freeze()", SETTINGS),
    "gc_callbacks": ("import gc\ngc.callbacks.append(print)", "gc.callbacks.append(<", SETTINGS),
    "gc_get_objects": ("import gc\ngc.get_objects()", "gc.get_objects()", "it reaches every object of the process"),
    "threading_setprofile": ("import threading\nthreading.setprofile(len)", "threading.setprofile(<built-in function len>)", SETTINGS),
    "threading_settrace": ("import threading\nthreading.settrace(len)", "threading.settrace(<built-in function len>)", SETTINGS),
    "threading_stack_size": ("import threading\nthreading.stack_size(1 << 20)", "threading.stack_size(1048576)", SETTINGS),
    "thread_stack_size": ("import _thread\n_thread.stack_size(1 << 20)", "_thread.stack_size(1048576)", SETTINGS),
    "thread_interrupt_main": ("import _thread\n_thread.interrupt_main()", "_thread.interrupt_main()", SETTINGS),
    "multiprocessing_spawn": ("import multiprocessing\nmultiprocessing.get_context('spawn').Process(target=int).start()",
                              "_posixsubprocess.fork_exec(", PROCESS),
    "import_alarmkit": ("import alarmkit", "import alarmkit", OWN),
    "from_alarmkit": ("from alarmkit.workers.python import _contain", "import alarmkit.workers.python", OWN),
    "import_module_alarmkit": ("import importlib\nimportlib.import_module('alarmkit.kernel')", "import alarmkit.kernel", OWN),
}


def _children() -> set[str]:
    """The processes this one has started and not reaped (Linux: /proc/self/task/*/children)."""
    out: set[str] = set()
    for path in glob.glob("/proc/self/task/*/children"):
        out.update(Path(path).read_text().split())
    return out


def _entry(tmp_path: Path, code: str, place: str) -> Path:
    (tmp_path / "src").mkdir()
    entry = tmp_path / "src" / "entry.py"
    head = f"from workers import DurableObject\nTARGET = {str(tmp_path / 'target')!r}\nKEEP = []\n"
    if place == "top":
        entry.write_text(head + code + "\n\nclass W(DurableObject):\n    async def go(self):\n        return None\n")
    else:
        body = code.replace("\n", "\n        ")
        entry.write_text(head + f"\nclass W(DurableObject):\n    async def go(self):\n        {body}\n        return None\n")
    return entry


@pytest.mark.parametrize("place", ["rpc", "top"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_reach_out_of_the_simulation_is_refused_by_name_and_nothing_leaks(tmp_path, capfd, name, place):
    code, call, why = CASES[name]
    t = str(tmp_path / "target")
    entry = _entry(tmp_path, code, place)
    before, kids = sorted(p.name for p in tmp_path.iterdir()), _children()
    env = dict(os.environ)
    sim = ak.Simulation(seed=0)
    expected = rf"^{re.escape(call.format(t=t))}.* in the worker's code at {re.escape(str(entry))}:\d+: {re.escape(why)}"
    if place == "top":
        with pytest.raises(ak.WorkerError, match=re.escape(call.format(t=t))) as err:
            sim.load_worker(entry, bindings={"W": "W"})
        assert f"{entry}:" in str(err.value) and why in str(err.value)
    else:
        w = sim.load_worker(entry, bindings={"W": "W"})
        with pytest.raises(ak.WorkerUnsupported, match=expected) as err:
            sim.call(w.env.W.getByName("a").go())
        assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not Path(t).exists()
    assert _children() <= kids, "a process was started"
    assert dict(os.environ) == env
    import gc
    import threading
    assert gc.isenabled() and gc.get_threshold()[0] > 1 and threading.stack_size() == 0
    out, errtext = capfd.readouterr()
    assert out == "" and errtext == ""


def _call(tmp_path: Path, body: str, until: int | None = None) -> tuple[ak.Simulation, object, object]:
    entry = _entry(tmp_path, body, "rpc").read_text().replace("        return None\n", "")
    (tmp_path / "src" / "entry.py").write_text(entry)
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(tmp_path / "src" / "entry.py", bindings={"W": "W"})
    return sim, w, w.env.W.getByName("a")


def test_expanduser_and_expandvars_read_the_sessions_home_and_environment(tmp_path):
    sim, w, a = _call(tmp_path, "import os, posixpath, posix\n"
                      "return [os.path.expanduser('~'), os.path.expanduser('~/notes'), os.path.expanduser('~root/x'),\n"
                      "        posixpath.expanduser(b'~/b').decode(), os.path.expandvars('$HOME:$PATH:${USER}'),\n"
                      "        sorted(k.decode() for k in posix.environ), os.path.join('a', 'b')]")
    assert sim.call(a.go()) == ["/session", "/session/notes", "~root/x", "/session/b", "/session:$PATH:${USER}",
                                ["HOME"], "a/b"]


def test_the_worker_sees_no_alarmkit_in_sys_modules(tmp_path):
    sim, w, a = _call(tmp_path, "import sys\ntry:\n    sys.modules['alarmkit']\n    got = 'found'\n"
                      "except KeyError:\n    got = 'KeyError'\n"
                      "return [got, 'alarmkit' in sys.modules, sys.modules.get('alarmkit.kernel'),\n"
                      "        [k for k in sys.modules if k.startswith('alarmkit')], 'json' in sys.modules]")
    assert sim.call(a.go()) == ["KeyError", False, None, [], True]


def test_importlib_imports_as_the_workers_import_and_reloads_its_own_modules(tmp_path):
    sim, w, a = _call(tmp_path, "import importlib, importlib.util, os, time, helper\n"
                      "helper.COUNT.append(1)\n"
                      "again = importlib.reload(helper)\n"
                      "return [importlib.import_module('os') is os, importlib.import_module('time').time(),\n"
                      "        importlib.reload(os) is os, again is helper, helper.COUNT, importlib.util.find_spec('json').name]")
    (tmp_path / "src" / "helper.py").write_text("COUNT = []\n")
    assert sim.call(a.go()) == [True, 0.0, True, True, [], "json"]


def test_hasattr_of_a_refused_member_is_false_and_its_use_is_refused_by_name(tmp_path):
    sim, w, a = _call(tmp_path, "import js, sqlite3\nc = sqlite3.connect(':memory:')\n"
                      "return [hasattr(js.Math, 'floor'), hasattr(self.ctx, 'acceptWebSocket'),\n"
                      "        hasattr(self.ctx.storage, 'getCurrentBookmark'), hasattr(self.ctx.storage.sql, 'Statement'),\n"
                      "        hasattr(c, 'load_extension'), getattr(js.console, 'table', 'none')]")
    assert sim.call(a.go()) == [False, False, False, False, False, "none"]
    (tmp_path / "b").mkdir()
    sim, w, a = _call(tmp_path / "b", "return self.ctx.getWebSockets()")
    with pytest.raises(ak.MemberUnsupported, match=r"^ctx\.getWebSockets is refused under alarmkit's Python Worker "
                       "host: WebSockets are not simulated") as err:
        sim.call(a.go())
    assert isinstance(err.value, ak.WorkerUnsupported) and isinstance(err.value, AttributeError)


def test_js_date_new_reads_the_virtual_clock(tmp_path):
    sim, w, a = _call(tmp_path, "import js, asyncio\nawait asyncio.sleep(5)\nd = js.Date.new()\n"
                      "return [d.getTime(), js.Date.now(), js.Date.new(d).getTime(), js.Date.new(86_400_000).toISOString(),\n"
                      "        js.Date.new(2024, 0, 31, 1, 2, 3, 4).toISOString(), js.Date.new(2024, 12, 1).toISOString(),\n"
                      "        js.Date.new('2024-01-02T03:04:05Z').getTime(), repr(js.Date.new('not a date'))]")
    assert sim.call(a.go()) == [5000.0, 5000.0, 5000.0, "1970-01-02T00:00:00.000Z", "2024-01-31T01:02:03.004Z",
                                "2025-01-01T00:00:00.000Z", 1704164645000.0, "Date(Invalid Date)"]


def test_asyncio_sleep_of_nan_raises_at_the_await_as_python_3_13_does(tmp_path):
    sim, w, a = _call(tmp_path, "import asyncio\ncoro = asyncio.sleep(float('nan'))\ntry:\n    await coro\n"
                      "except ValueError as err:\n    return str(err)")
    assert sim.call(a.go()) == "Invalid delay: NaN (not a number)" and sim.now == 0


def test_asyncio_sleep_of_infinity_waits_workerds_longest_timer(tmp_path):
    sim, w, a = _call(tmp_path, "import asyncio\nawait asyncio.sleep(float('inf'))\nreturn 'woke'")
    with pytest.raises(ak.RunawayError, match=r"the next event, at 3,153,600,000,000 ms, is more than time_limit_ms"):
        sim.call(a.go())  # 100 years: workerd's setTimeout clamp; the run's own time limit stops it, one line


def test_sys_stdout_buffer_is_the_workers_console(tmp_path, capfd):
    sim, w, a = _call(tmp_path, "import sys\nb = sys.stdout.buffer\nb.write(b'bytes out\\n')\n"
                      "b.write('caf\\u00e9 '.encode()[:-2])\nb.write('caf\\u00e9 '.encode()[-2:] + b'\\xff\\n')\n"
                      "sys.stderr.buffer.write(b'oops\\n')\nb.flush()\nreturn b.write(memoryview(b'x'))")
    assert sim.call(a.go()) == 1
    assert [(lvl, text) for _, lvl, text in w.logs] == [("log", "bytes out"), ("log", "caf\u00e9 \ufffd"),
                                                        ("error", "oops")]
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_workers_finalizer_run_after_the_simulation_writes_nothing_and_says_so_in_one_line(tmp_path):
    """A ``__del__`` (and a ``weakref`` callback) of the worker's runs when Python's collector reaches the
    object: after the simulation, outside any gated step. It wrote its file there; now the hook refuses it
    and, as Python cannot raise from a finalizer, the refusal is one line on stderr, not a traceback."""
    import subprocess
    import sys

    t = tmp_path / "target"
    _entry(tmp_path, "return None", "rpc")
    entry = tmp_path / "src" / "entry.py"
    entry.write_text(entry.read_text().replace("KEEP = []\n", f'''KEEP = []
import weakref

class Leak:
    def __del__(self):
        open({str(t)!r} + "-del", "w").write("after")

class Box:
    pass

HELD = Leak()  # dies with the module, at the process's exit
BOX = Box()
KEEP.append(weakref.ref(BOX, lambda ref: open({str(t)!r} + "-ref", "w")))
'''))
    script = (f"import gc, alarmkit as ak\nsim = ak.Simulation(seed=0)\nw = sim.load_worker({str(entry)!r}, "
              "bindings={'W': 'W'})\nsim.call(w.env.W.getByName('a').go())\ndel w.module.BOX\ngc.collect()\n"
              "print('ran')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(ak.__file__).parent.parent)})
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
    said = "which Python's collector ran outside the simulation: open("
    assert [line.split(", 'w'")[0] for line in done.stderr.splitlines()] == [
        f"alarmkit: refused in <lambda>, {said}{str(t) + '-ref'!r}",  # the weakref callback, as BOX is collected
        f"alarmkit: refused in Leak.__del__, {said}{str(t) + '-del'!r}"], done.stderr  # at the process's exit
    assert all(f" in the worker's code at {entry}:" in line and "a file written outside the simulation" in line
               for line in done.stderr.splitlines())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
