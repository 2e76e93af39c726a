"""The modules a Python Worker gets in place of the process's: ``time``, ``datetime``, ``asyncio``, ``js``,
``pyodide`` and ``pyodide.ffi``, each made for one loaded worker and reading that simulation's clock.

Nothing global is patched: the real ``time`` and ``datetime`` modules are untouched, so threads, DuckDB,
plotting and a Jupyter kernel keep real time. What reads the virtual clock is only the worker's own
modules' names (see ``_importer``). The clock is the workerd one a handler sees: ``Date.now()`` does not
move while code runs (workerd freezes it between I/O as a Spectre mitigation), and the local time zone is
UTC, as in Workers, whatever the machine's.
"""

from __future__ import annotations

import asyncio as _aio
import datetime as _dt
import json
import time as _time
import types
from typing import Any

from ...errors import MemberUnsupported, WorkerUnsupported
from ...kernel import Future
from ._convert import JsDate, JsDict, from_rpc, to_rpc
from ._guard import log_line, start_task
from ._noloop import own_loop, run
from ._process import make_faulthandler, make_signal, make_sys
from ._sdk import outbound_fetch
from ._reach import make_reach
from ._unaudited import make_unaudited

__all__ = ["make_modules"]

_UTC = _dt.timezone.utc
MAX_TIMER_MS = 3_153_600_000_000  # workerd's longest setTimeout: 100 years (io-context.c++ setTimeoutImpl)


def _clock_time(sim: Any) -> types.ModuleType:
    mod = types.ModuleType("time", "time, reading the simulation's clock (UTC, frozen while code runs)")
    mod.__dict__.update({k: v for k, v in vars(_time).items() if not k.startswith("__")})

    def now_s() -> float:
        return sim.now / 1000

    def sleep(secs: float) -> None:
        raise WorkerUnsupported("time.sleep() blocks the whole isolate and never moves the virtual clock; "
                                "use await asyncio.sleep(seconds) in async code")

    mod.__dict__.update(
        time=now_s, time_ns=lambda: sim.now * 1_000_000, monotonic=now_s, monotonic_ns=lambda: sim.now * 1_000_000,
        perf_counter=now_s, perf_counter_ns=lambda: sim.now * 1_000_000, sleep=sleep,
        gmtime=lambda secs=None: _time.gmtime(now_s() if secs is None else secs),
        localtime=lambda secs=None: _time.gmtime(now_s() if secs is None else secs),
        ctime=lambda secs=None: _time.asctime(_time.gmtime(now_s() if secs is None else secs)),
        asctime=lambda t=None: _time.asctime(_time.gmtime(now_s()) if t is None else t),
        strftime=lambda fmt, t=None: _time.strftime(fmt, _time.gmtime(now_s()) if t is None else t),
        timezone=0, altzone=0, daylight=0, tzname=("UTC", "UTC"),
    )
    return mod


def _clock_datetime(sim: Any) -> types.ModuleType:
    mod = types.ModuleType("datetime", "datetime, whose now()/utcnow()/today() read the simulation's clock")
    mod.__dict__.update({k: v for k, v in vars(_dt).items() if not k.startswith("__")})

    class datetime(_dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            t = _dt.datetime.fromtimestamp(sim.now / 1000, _UTC)
            t = t.replace(tzinfo=None) if tz is None else t.astimezone(tz)
            return cls(t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond, t.tzinfo)

        @classmethod
        def utcnow(cls) -> Any:
            return cls.now()

        @classmethod
        def today(cls) -> Any:
            return cls.now()

    class date(_dt.date):
        @classmethod
        def today(cls) -> Any:
            t = datetime.now()
            return cls(t.year, t.month, t.day)

    datetime.__module__ = date.__module__ = "datetime"
    mod.datetime, mod.date = datetime, date
    return mod


def _asyncio(sim: Any) -> types.ModuleType:
    mod = types.ModuleType("asyncio", "asyncio on the simulation's kernel: sleep, gather, create_task")
    mod.__dict__.update({k: v for k, v in vars(_aio).items() if not k.startswith("__")})

    def sleep(delay: float, result: Any = None) -> Any:
        """``await asyncio.sleep(s)`` on the virtual clock, as Pyodide's (Python 3.13) does on workerd: ``s <= 0``
        returns at once (after one turn of the loop); NaN raises ``ValueError`` at the await (CPython 3.13's
        ``asyncio.sleep``); a longer delay than workerd's timers take (``inf`` too) waits workerd's longest,
        100 years (``IoContext::setTimeoutImpl`` clamps ``setTimeout``, on which Pyodide's loop sleeps, to
        [0, 3153600000000] ms: src/workerd/io/io-context.c++)."""
        if isinstance(delay, bool) or not isinstance(delay, (int, float)):
            raise TypeError(f"asyncio.sleep() takes a number of seconds, got {type(delay).__name__}")
        nan = delay != delay
        ms = 0 if nan or delay <= 0 else min(delay * 1000, MAX_TIMER_MS)
        if ms > 2**53 - sim.now:
            raise TypeError(f"asyncio.sleep({delay!r:.40}): past the end of the simulation's clock (2**53 ms); "
                            "sleep less")

        ms = int(round(ms))

        async def wait() -> Any:
            if nan:
                raise ValueError("Invalid delay: NaN (not a number)")
            await (sim.kernel.sleep(ms) if ms else sim.kernel.checkpoint())
            return result

        return wait()

    def gather(*aws: Any, return_exceptions: bool = False) -> Any:
        if not return_exceptions:
            return sim.gather(*aws)

        async def caught(aw: Any) -> Any:
            try:
                return await aw
            except Exception as err:  # noqa: BLE001 - return_exceptions: the error is the result
                return err

        return sim.gather(*(caught(a) for a in aws))

    def create_task(coro: Any, name: str | None = None) -> Any:
        return start_task(sim, coro, name or "task")

    mod.__dict__.update(sleep=sleep, gather=gather, create_task=create_task, ensure_future=create_task, Future=Future,
                        run=run, new_event_loop=own_loop("new_event_loop"), Runner=own_loop("Runner"),
                        TaskGroup=own_loop("TaskGroup"))  # it was 'TaskGroup cannot determine the parent task'
    return mod


def _no_member(owner: str, name: str, members: Any) -> Any:
    """``js.Math.floor``: a member of a JavaScript global the host does not give, refused by name (it was
    ``AttributeError: type object '_Math' has no attribute 'floor'``, naming a class of alarmkit's)."""
    if name.startswith("__"):
        raise AttributeError(name)
    has = ", ".join(sorted(k for k in members if not k.startswith("_"))) or "nothing"
    raise MemberUnsupported(f"js.{owner}.{name}: this member is not provided by alarmkit's Python Worker host "
                            f"(js.{owner} has {has}); see docs/workers.md")


class _Global(type):
    """The class of a JavaScript global of the worker's ``js`` module: a member it lacks is refused by name."""

    def __getattr__(cls, name: str) -> Any:
        return _no_member(cls.__name__.lstrip("_").replace("JsResponse", "Response").replace("JsRequest", "Request"),
                          name, vars(cls))


def _date_ms(sim: Any, args: tuple) -> float:
    if not args:
        return float(sim.now)
    if len(args) == 1:
        (value,) = args
        if isinstance(value, JsDate):
            return value.ms
        if isinstance(value, str):
            try:
                t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return float("nan")
            return (t if t.tzinfo else t.replace(tzinfo=_UTC)).timestamp() * 1000 // 1
        try:
            return float(value)
        except (TypeError, ValueError):
            return float("nan")
    try:
        y, mo, *rest = (float(a) for a in args[:7])
        d, h, mi, sec, ms = (rest + [1.0, 0.0, 0.0, 0.0, 0.0][len(rest):])[:5]
        y += 1900 if 0 <= y <= 99 else 0  # JavaScript's two-digit years
        base = _dt.datetime(int(y) + int(mo // 12), int(mo % 12) + 1, 1, tzinfo=_UTC)
        return base.timestamp() * 1000 + ((((d - 1) * 24 + h) * 60 + mi) * 60 + sec) * 1000 + ms
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _js(sim: Any, sdk: types.ModuleType, worker: Any) -> types.ModuleType:
    mod = types.ModuleType("js", "the JavaScript globals a Python Worker reads, as the simulation provides them")

    class Date(metaclass=_Global):
        @staticmethod
        def now() -> float:
            return float(sim.now)

        @staticmethod
        def new(*args: Any) -> JsDate:
            """``new Date()``: the simulation's now; ``new Date(ms)``, ``new Date(iso_text)``, ``new Date(date)``,
            ``new Date(y, m, d, h, mi, s, ms)`` (the month from 0, the local time zone UTC, as in Workers);
            what JavaScript makes an Invalid Date is NaN."""
            return JsDate(_date_ms(sim, args))

    class _Object(metaclass=_Global):
        @staticmethod
        def fromEntries(entries: Any) -> JsDict:
            return JsDict(dict(entries))

        @staticmethod
        def keys(obj: Any) -> list:
            return list(obj)

    class _JSON(metaclass=_Global):
        @staticmethod
        def stringify(value: Any, *a: Any) -> str:
            return json.dumps(to_rpc(value), separators=(",", ":"))

        @staticmethod
        def parse(text: str) -> Any:
            return from_rpc(json.loads(text))

    class _Math(metaclass=_Global):
        @staticmethod
        def random() -> float:
            return sim.kernel.rng.random()

    class _Console:
        def __getattr__(self, name: str) -> Any:
            return _no_member("console", name, vars(type(self)))

        def _log(self, level: str, *args: Any) -> None:
            log_line(worker, level, " ".join(str(a) for a in args))

        def log(self, *a: Any) -> None:
            self._log("log", *a)

        def info(self, *a: Any) -> None:
            self._log("info", *a)

        def warn(self, *a: Any) -> None:
            self._log("warn", *a)

        def error(self, *a: Any) -> None:
            self._log("error", *a)

        debug = log

    class _JsResponse(metaclass=_Global):
        @staticmethod
        def new(body: Any = None, **options: Any) -> Any:
            return sdk.Response(body, options.get("status"), options.get("statusText", ""), options.get("headers"))

        @staticmethod
        def json(data: Any, **options: Any) -> Any:
            return sdk.Response.from_json(data, options.get("status", 200), "", options.get("headers"))

    class _JsRequest(metaclass=_Global):
        @staticmethod
        def new(url: Any, **options: Any) -> Any:
            return sdk.Request(url, **options)

    async def fetch(*a: Any, **kw: Any) -> Any:
        raise outbound_fetch("js.fetch")

    class _WebSocket(metaclass=_Global):
        @staticmethod
        def new(url: Any = "", *a: Any, **kw: Any) -> Any:
            raise WorkerUnsupported(f"js.WebSocket.new({str(url)[:120]!r}): a network connection leaves the simulation, "
                                    "which alarmkit does not do; bind a fake of the service instead "
                                    "(load_worker(..., bindings={'FEED': my_fake})) and call env.FEED from the worker")

    def _missing(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise WorkerUnsupported(f"js.{name}: this JavaScript global is not provided by alarmkit's Python Worker host "
                                "(it has Date, JSON, Object, Math.random, console, Response, Request); "
                                "see docs/workers.md")

    mod.__dict__.update(Date=Date, Object=_Object, JSON=_JSON, Math=_Math, console=_Console(), Response=_JsResponse,
                        Request=_JsRequest, fetch=fetch, WebSocket=_WebSocket, __getattr__=_missing)
    return mod


def _pyodide() -> tuple[types.ModuleType, types.ModuleType]:
    pkg = types.ModuleType("pyodide", "pyodide, as much of it as a Python Worker uses under alarmkit")
    ffi = types.ModuleType("pyodide.ffi")

    class JsProxy:
        """No value here is a JsProxy: every value is already converted as the SDK converts it."""

    class JsException(Exception):
        pass

    def to_js(obj: Any, *args: Any, **kwargs: Any) -> Any:
        return to_rpc(obj)

    def run_sync(aw: Any) -> Any:
        raise WorkerUnsupported("pyodide.ffi.run_sync: JSPI stack switching is not simulated; await the value instead")

    ffi.__dict__.update(JsProxy=JsProxy, JsException=JsException, to_js=to_js, create_proxy=lambda f, **kw: f,
                        create_once_callable=lambda f, **kw: f, destroy_proxies=lambda proxies: None, run_sync=run_sync,
                        JsArray=list, JsMap=dict)
    pkg.__dict__.update(ffi=ffi, __version__="0.28.2", __path__=[])
    return pkg, ffi


def make_modules(worker: Any, sdk: types.ModuleType) -> dict[str, types.ModuleType]:
    """The shim modules of one worker, by the name its code imports them under."""
    sim = worker.sim
    pkg, ffi = _pyodide()
    unaudited = make_unaudited()
    return {"time": _clock_time(sim), "datetime": _clock_datetime(sim), "asyncio": _asyncio(sim),
            "js": _js(sim, sdk, worker), "pyodide": pkg, "pyodide.ffi": ffi, "workers": sdk, "signal": make_signal(),
            "sys": make_sys(worker), "faulthandler": make_faulthandler(),
            **unaudited, **make_reach(unaudited["os"])}
