"""Your own worker under the virtual clock: a Cloudflare Worker's module, loaded unchanged.

The interface (shared by the Python host, ``alarmkit.workers.python``, and the JS/TS host,
``alarmkit.workers.js``):

- ``Simulation.load_worker(path, bindings=None, wrangler=None, compatibility_date=None)`` calls
  ``load_worker(sim, ...)`` here, which dispatches on the suffix: ``.py`` ->
  ``alarmkit.workers.python.load(sim, path, bindings, compat)``; ``.js .mjs .ts .mts`` ->
  ``alarmkit.workers.js.load(sim, path, bindings, compat)``. ``bindings`` maps a binding name to a
  Durable Object class name in the module (or the class), or to any Python object, which the worker
  sees as that binding (a fake for a KV namespace, an outbound API...; the JS host takes class names as
  text, calls a callable as the binding's ``fetch`` and any other object's methods over the pipe, and
  passes JSON values as they are). ``wrangler`` (a path) adds
  the Durable Object bindings, ``vars`` and ``compatibility_date`` of a wrangler.jsonc/.json/.toml
  (``alarmkit.workers.wrangler``); ``bindings`` given too override its entries. ``path`` may be
  omitted when the wrangler file names ``main``.
- Both hosts return a ``Worker`` (``alarmkit.workers._base``): ``.env`` (namespaces with
  ``getByName``, ``idFromName``, ``get``; stubs whose RPC methods and ``.fetch(request)`` return
  awaitables driven by ``sim.call``/``sim.spawn``), ``.fetch(url, method=, headers=, body=)`` ->
  ``Response`` (``.status``, ``.text()``, ``.json()``), ``.request(...)`` (the awaitable of one
  request), ``.stub(binding, name)``, ``.check_method(binding, method)``, ``.classes``. A host's stubs
  carry ``_host`` (the simulation's object), so ``sim.inspect(stub)``, ``sim.evict(stub)`` and drive
  expectations take them; a host whose methods are known before a call overrides ``Worker.methods``.
- Drive scripts (``alarmkit.workers.drive``): ``load_drive(path)``, ``run_drive(worker, drive)``; a whole
  run as a ``RunResult`` (``run_worker``) or an exploration (``explore_worker``): ``alarmkit.workers.runs``.
- The CLI (``alarmkit.workers.command``): ``alarmkit worker ENTRY [--wrangler F] --drive F --db J
  [--report out.html]`` and ``alarmkit explore --worker ENTRY --drive F --invariant ...``.

Every error is an ``AlarmkitError``: ``WorkerError`` (cannot load as given), ``WorkerUnsupported``
(something the simulation cannot run, named with how to stub it), ``DriveError``. See docs/workers.md.
"""

from __future__ import annotations

from ..errors import DriveError, WorkerError, WorkerUnsupported
from ..runtime import Simulation
from ._base import Headers, RefusedBinding, Request, Response, Var, Worker
from .drive import DriveResult, DriveScript, load_drive, parse_drive, run_drive
from ._load import SUFFIXES, example, load_worker
from .runs import explore_worker, register, registered, run_worker
from .wrangler import WranglerConfig, read_wrangler

__all__ = [
    "load_worker", "Worker", "Request", "Response", "Headers", "DriveScript", "DriveResult", "load_drive",
    "parse_drive", "run_drive", "WranglerConfig", "read_wrangler", "WorkerError", "WorkerUnsupported", "DriveError",
    "SUFFIXES", "RefusedBinding", "Var", "run_worker", "explore_worker", "example", "register", "registered",
]

Simulation.worker_loader = staticmethod(load_worker)
