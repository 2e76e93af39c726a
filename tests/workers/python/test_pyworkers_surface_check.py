"""The Python Worker host's surface, checked member by member as the JavaScript host's is
(tests/workers/js/test_js_surface_check.py): every member of DurableObjectState, DurableObjectStorage and
SqlStorage that @cloudflare/workers-types declares (pinned in tests/workers/js/libs/workers-types, installed
with `npm ci` into a cache folder), and every worker global as `js.NAME`, is either there or refused with a
WorkerUnsupported naming it (a member: a MemberUnsupported, also an AttributeError): never a raw
AttributeError in the worker's code. The test lists both sets."""

import textwrap

import pytest

import alarmkit as ak
from workers_types import INTERFACES, declared, npm_install  # tests/workers_types.py

PROBE = '''
import js
from workers import DurableObject


def probe(obj, name):
    try:
        getattr(obj, name)
        return ["implemented", ""]
    except Exception as err:  # the worker sees what a user's code would see
        kind = "refused" if type(err).__name__ in ("WorkerUnsupported", "MemberUnsupported") else "missing"
        return [kind, f"{type(err).__name__}: {err}"]


class Probe(DurableObject):
    async def surface(self, names):
        where = {"ctx": self.ctx, "storage": self.ctx.storage, "sql": self.ctx.storage.sql, "globals": js}
        return {w: {n: probe(where[w], n) for n in names.get(w, [])} for w in where}

    async def values(self):
        cursor = self.ctx.storage.sql.exec("SELECT 1 AS one")
        return {"props": self.ctx.props, "cursor": isinstance(cursor, self.ctx.storage.sql.Cursor),
                "one": cursor.one().one}
'''

# what the Python host implements and what it refuses by name (alarmkit/workers/python/_surface.py); a member
# moving from one set to the other is a change of the host's surface: say it in docs/workers.md
IMPLEMENTED = {
    "ctx": ["abort", "blockConcurrencyWhile", "id", "props", "storage", "waitUntil"],
    "storage": ["delete", "deleteAlarm", "deleteAll", "get", "getAlarm", "kv", "list", "put", "setAlarm", "sql", "sync",
                "transaction", "transactionSync"],
    "sql": ["Cursor", "databaseSize", "exec"],
}
REFUSED = {
    "ctx": ["acceptWebSocket", "container", "exports", "facets", "getHibernatableWebSocketEventTimeout", "getTags",
            "getWebSocketAutoResponse", "getWebSocketAutoResponseTimestamp", "getWebSockets",
            "setHibernatableWebSocketEventTimeout", "setWebSocketAutoResponse"],
    "storage": ["getBookmarkForTime", "getCurrentBookmark", "onNextSessionRestoreBookmark"],
    "sql": ["Statement"],
}
# the globals `from js import NAME` gives (fetch and WebSocket refuse at the call, as the JS host's do);
# every other declared global is refused by name
GLOBALS_IMPLEMENTED = ["Request", "Response", "WebSocket", "console", "fetch"]


def load(tmp_path):
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE))
    sim = ak.Simulation(seed=0)
    w = sim.load_worker(tmp_path / "probe.py", bindings={"PROBE": "Probe"})
    return sim, w.env.PROBE.getByName("p")


@pytest.fixture(scope="module")
def surface(tmp_path_factory):
    dts = (npm_install("workers-types") / "@cloudflare" / "workers-types" / "index.d.ts").read_text()
    names = declared(dts)
    sim, probe = load(tmp_path_factory.mktemp("probe"))
    return names, sim.call(probe.surface(names))


def test_every_declared_member_is_there_or_refused_by_name(surface):
    names, got = surface
    assert len(names["globals"]) > 90 and {"setTimeout", "WebSocketPair", "caches"} <= set(names["globals"])
    missing = sorted(f"{w}.{n}: {msg}" for w, table in got.items() for n, (status, msg) in table.items()
                     if status == "missing")
    assert missing == [], "members neither implemented nor refused by name:\n" + "\n".join(missing)
    path = {"ctx": "ctx.", "storage": "ctx.storage.", "sql": "ctx.storage.sql.", "globals": "js."}
    for w, table in got.items():
        for n, (status, msg) in table.items():
            if status == "refused":  # the error names the member with its path
                cls = "WorkerUnsupported" if w == "globals" else "MemberUnsupported"  # hasattr(ctx, n): False
                assert msg.startswith(f"{cls}: {path[w]}{n}"), msg


def test_the_two_sets_as_listed(surface):
    names, got = surface
    for w in INTERFACES:
        assert sorted(IMPLEMENTED[w] + REFUSED[w]) == names[w]          # workers-types' own list, whole
        assert sorted(n for n, (s, _) in got[w].items() if s == "implemented") == IMPLEMENTED[w]
        assert sorted(n for n, (s, _) in got[w].items() if s == "refused") == REFUSED[w]
    assert sorted(n for n, (s, _) in got["globals"].items() if s == "implemented") == GLOBALS_IMPLEMENTED
    refused = sorted(n for n, (s, _) in got["globals"].items() if s == "refused")
    assert len(refused) == len(names["globals"]) - 5 and {"setTimeout", "WebSocketPair", "caches"} <= set(refused)


def test_a_refused_member_says_what_and_why_and_an_undeclared_one_is_pythons_error(tmp_path):
    sim, probe = load(tmp_path)
    got = sim.call(probe.surface({"ctx": ["getWebSocketAutoResponse", "noSuchThing"], "storage": ["getBookmarkForTime"],
                                  "sql": ["Statement"]}))
    assert got["ctx"] == {
        "getWebSocketAutoResponse": ["refused", "MemberUnsupported: ctx.getWebSocketAutoResponse is refused under "
                                                "alarmkit's Python Worker host: WebSockets are not simulated for Python "
                                                "Workers by alarmkit; drive the object through RPC methods or fetch instead"],
        "noSuchThing": ["missing", "AttributeError: DurableObjectState has no attribute 'noSuchThing'"]}
    assert got["storage"]["getBookmarkForTime"] == [
        "refused", "MemberUnsupported: ctx.storage.getBookmarkForTime is refused under alarmkit's Python Worker host: "
                   "point-in-time recovery (bookmarks) is not modelled by the simulation"]
    assert got["sql"]["Statement"][1] == (
        "MemberUnsupported: ctx.storage.sql.Statement is refused under alarmkit's Python Worker host: prepared "
        "statements are not offered; call sql.exec(query, *bindings), which takes the same bindings")


def test_the_values_of_the_new_members(tmp_path):
    sim, probe = load(tmp_path)
    assert sim.call(probe.values()) == {"props": {}, "cursor": True, "one": 1}   # ctx.props: {} as workerd's
