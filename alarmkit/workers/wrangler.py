"""Reading a project's ``wrangler.jsonc`` / ``wrangler.json`` / ``wrangler.toml``: what a simulation
needs from it (``main``, ``compatibility_date``, ``compatibility_flags``, the Durable Object bindings,
``vars``, the bundle's ``define`` and ``alias``) and the
bindings it cannot run (KV, R2, D1, queues, services...), so a worker touching one is refused by name.

``.dev.vars`` beside the file (wrangler dev's secrets and local vars, dotenv lines ``NAME=value``) is
read too (without one, ``.env`` and ``.env.local``, as wrangler reads them); its values are text and override ``vars`` of the same name, as wrangler's do.

Only the top-level environment is read (``env.<name>`` sections are ignored, as ``wrangler dev``
without ``--env`` does). Never evaluated: JSON with comments and trailing commas, or TOML (tomllib).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import WorkerError
from ._dotenv import expand_dotenv, parse_dotenv

__all__ = ["WranglerConfig", "read_wrangler", "read_dev_vars", "OTHER_BINDINGS"]

MAX_CONFIG = 1 << 20  # 1 MiB: a wrangler file is a few KiB

# wrangler's config keys for bindings the simulation cannot run, and what each holds a binding's name in
OTHER_BINDINGS = {
    "kv_namespaces": ("binding", "KV namespace"),
    "r2_buckets": ("binding", "R2 bucket"),
    "d1_databases": ("binding", "D1 database"),
    "services": ("binding", "service binding"),
    "vectorize": ("binding", "Vectorize index"),
    "hyperdrive": ("binding", "Hyperdrive config"),
    "analytics_engine_datasets": ("binding", "Analytics Engine dataset"),
    "workflows": ("binding", "Workflow"),
    "mtls_certificates": ("binding", "mTLS certificate"),
    "dispatch_namespaces": ("binding", "dispatch namespace"),
    "send_email": ("name", "send_email binding"),
    "pipelines": ("binding", "Pipeline"),
    "secrets_store_secrets": ("binding", "Secrets Store secret"),
    "ratelimits": ("name", "rate limiter"),
}
SINGLE_BINDINGS = {"ai": "Workers AI binding", "browser": "Browser Rendering binding", "images": "Images binding",
                   "assets": "static assets binding", "version_metadata": "version metadata binding"}


@dataclass
class WranglerConfig:
    """What a wrangler file says: ``durable_objects`` (binding -> class name), ``vars`` (binding -> value),
    ``other`` (binding -> what it is, e.g. ``"KV namespace"``), ``main``, ``compatibility_date``,
    ``compatibility_flags``, and the bundle's ``define`` and ``alias``."""

    path: str
    main: str | None = None
    compatibility_date: str | None = None
    compatibility_flags: list[str] = field(default_factory=list)
    define: dict[str, str] = field(default_factory=dict)  # bundle-time substitutions (esbuild's define)
    alias: dict[str, str] = field(default_factory=dict)  # module name -> the module bundled in its place
    durable_objects: dict[str, str] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)
    other: dict[str, str] = field(default_factory=dict)


def strip_jsonc(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas, as plain JSON (strings kept whole)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("a /* comment is never closed")
            i = j + 2
        elif c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "]}":
                i += 1  # a trailing comma
                continue
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_wrangler(path: str | Path) -> WranglerConfig:
    """Read a wrangler file; ``WorkerError`` naming the file and the fault when it cannot be read or is
    not shaped as wrangler's (a binding without a name or class)."""
    p = Path(path)
    if not p.is_file():
        raise WorkerError(f"no wrangler file {str(p)!r}; pass --wrangler wrangler.jsonc (or .toml), or leave it out "
                          "and name the bindings")
    text = _read_config(p, "a wrangler file")
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(strip_jsonc(text))
    except (ValueError, RecursionError) as err:  # tomllib.TOMLDecodeError and JSONDecodeError are ValueErrors
        kind = "TOML" if p.suffix == ".toml" else "JSON (comments and trailing commas allowed)"
        raise WorkerError(f"{p} is not {kind}: {str(err)[:160]}") from None
    if not isinstance(data, dict):
        raise WorkerError(f"{p} holds a {type(data).__name__}, not a table of settings")
    return _config(str(p), data)


def _config(where: str, data: dict) -> WranglerConfig:
    cfg = WranglerConfig(where)
    for key in ("main", "compatibility_date"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise WorkerError(f"{where}: {key} must be text, got {value!r:.60}")
        setattr(cfg, key, value)
    flags = data.get("compatibility_flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise WorkerError(f"{where}: compatibility_flags must be a list of flag names such as [\"nodejs_compat\"], "
                          f"got {flags!r:.60}")
    cfg.compatibility_flags = list(flags)
    for key in ("define", "alias"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
            raise WorkerError(f"{where}: {key} must be a table of text to text, as wrangler's, got {table!r:.60}")
        setattr(cfg, key, dict(table))
    dobj = data.get("durable_objects", {})
    bindings = dobj.get("bindings", []) if isinstance(dobj, dict) else None
    if not isinstance(bindings, list):
        raise WorkerError(f"{where}: durable_objects.bindings must be a list of {{name, class_name}} tables")
    for b in bindings:
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not isinstance(b.get("class_name"), str):
            raise WorkerError(f"{where}: each durable_objects.bindings entry needs text name and class_name, got {b!r:.80}")
        if b.get("script_name"):
            cfg.other[b["name"]] = f"Durable Object namespace of another worker ({b['script_name']!r})"
        else:
            cfg.durable_objects[b["name"]] = b["class_name"]
    vars_ = data.get("vars", {})
    if not isinstance(vars_, dict):
        raise WorkerError(f"{where}: vars must be a table of names to values")
    cfg.vars = dict(vars_)
    for key, (name_key, what) in OTHER_BINDINGS.items():
        entries = data.get(key, [])
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and isinstance(e.get(name_key), str):
                cfg.other[e[name_key]] = what
    queues = data.get("queues", {})
    for e in queues.get("producers", []) if isinstance(queues, dict) else []:
        if isinstance(e, dict) and isinstance(e.get("binding"), str):
            cfg.other[e["binding"]] = "queue producer"
    for key, what in SINGLE_BINDINGS.items():
        e = data.get(key)
        if isinstance(e, dict) and isinstance(e.get("binding"), str):
            cfg.other[e["binding"]] = what
    return cfg


def _read_config(p: Path, what: str) -> str:
    """The text of a config file of at most ``MAX_CONFIG`` bytes, or ``WorkerError`` naming why not."""
    if p.stat().st_size > MAX_CONFIG:
        raise WorkerError(f"{p} is {p.stat().st_size:,} bytes, past the {MAX_CONFIG:,} {what} may be")
    try:
        return p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise WorkerError(f"cannot read {p}: {err}") from None


def read_dev_vars(folder: str | Path) -> dict[str, str]:
    """``.dev.vars`` in ``folder``; when there is none, ``.env`` and then ``.env.local`` (its names win),
    expanded (``$NAME``), as wrangler reads them; none of them: ``{}``. The syntax (``_dotenv``): ``NAME=value``
    lines, ``#`` comments, an optional ``export``, quoted values (``"``: ``\\n`` is a newline) that may run
    over lines, never evaluated. ``WorkerError`` naming the line that is not ``NAME=value``."""
    here = Path(folder)
    if (here / ".dev.vars").is_file():
        return parse_dotenv(here / ".dev.vars", _read_config(here / ".dev.vars", "a .dev.vars file"))
    out: dict[str, str] = {}
    for name in (".env", ".env.local"):
        if (here / name).is_file():
            out.update(parse_dotenv(here / name, _read_config(here / name, f"a {name} file")))
    return expand_dotenv(out)
