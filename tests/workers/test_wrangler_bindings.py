"""Bindings a wrangler file declares that the simulation cannot run: each read into ``other`` and refused by
name where the worker touches it, never a raw ``Cannot read properties of undefined`` (Cloudflare's
durable-chat template falls back to ``env.ASSETS.fetch`` for every path that is not a room)."""

import json

import pytest

import alarmkit as ak
from alarmkit.workers.wrangler import read_wrangler

CHAT = """export class Room {
  async fetch(req) { return new Response("room"); }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/rooms/")) return env.ROOM.getByName(url.pathname).fetch(request);
    return env.ASSETS.fetch(request);
  },
};
"""


def test_every_binding_kind_is_read_with_its_name(tmp_path):
    (tmp_path / "wrangler.json").write_text(json.dumps({
        "main": "w.js", "assets": {"directory": "./public", "binding": "ASSETS"},
        "version_metadata": {"binding": "VERSION"}, "pipelines": [{"binding": "EVENTS", "pipeline": "p"}],
        "secrets_store_secrets": [{"binding": "KEY", "store_id": "s", "secret_name": "k"}],
        "ratelimits": [{"name": "LIMITER", "namespace_id": "1001", "simple": {"limit": 10, "period": 60}}]}))
    assert read_wrangler(tmp_path / "wrangler.json").other == {
        "EVENTS": "Pipeline", "KEY": "Secrets Store secret", "LIMITER": "rate limiter",
        "ASSETS": "static assets binding", "VERSION": "version metadata binding"}


def test_the_assets_binding_is_refused_by_name_and_a_stub_serves(js_host, tmp_path):
    (tmp_path / "w.js").write_text(CHAT)
    (tmp_path / "wrangler.json").write_text(json.dumps({
        "main": "w.js", "assets": {"directory": "./public", "binding": "ASSETS"},
        "durable_objects": {"bindings": [{"name": "ROOM", "class_name": "Room"}]}}))
    w = ak.Simulation(seed=0).load_worker(wrangler=tmp_path / "wrangler.json")
    assert w.fetch("/rooms/a").text() == "room"
    r = w.fetch("/")
    assert (r.status, r.text()) == (500, "Internal Server Error")
    assert w.logs[-1] == (0, "error", "Uncaught WorkerUnsupported: env.ASSETS.fetch: ASSETS is a static assets binding, "
                                      "which alarmkit does not simulate; stub it with load_worker(..., "
                                      "bindings={'ASSETS': my_fake}) (any Python object with the methods your "
                                      "code calls) (in the worker's fetch handler)")
    stubbed = ak.Simulation(seed=0).load_worker(wrangler=tmp_path / "wrangler.json",
                                                bindings={"ASSETS": lambda request: ak.workers.Response("index.html")})
    assert stubbed.fetch("/").text() == "index.html"


@pytest.fixture
def js_host():
    from alarmkit.workers.js import available

    reason = available()
    if reason is not None:
        pytest.skip(f"the JavaScript host cannot run here: {reason}")
