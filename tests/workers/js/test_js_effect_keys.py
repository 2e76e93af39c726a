"""An outbound call to a bound stub is an effect keyed by its URL and, when it has one, a digest of
its body: two POSTs of different batches to one URL are two effects, the same request twice a
duplicate (the report's duplicate effects row)."""

import hashlib

import alarmkit as ak
from alarmkit.viz.report import summary_rows
from alarmkit.workers.js import load

BATCHER = """import { DurableObject } from "cloudflare:workers";
export class B extends DurableObject {
  async send(items) {
    await this.env.SINK.fetch("https://sink.example/batch", { method: "POST", body: JSON.stringify(items) });
  }
  async ping() { await this.env.SINK.fetch("https://sink.example/ping"); }
}
"""


def test_different_bodies_are_different_effects_and_the_same_request_is_a_duplicate(tmp_path, js_host):
    (tmp_path / "b.js").write_text(BATCHER)
    sim = ak.Simulation()
    seen = []
    w = load(sim, tmp_path / "b.js", {"B": "B", "SINK": lambda request: seen.append(request.text()) or "ok"})
    b = w.env.B.getByName("a")
    for items in ([1, 2], [3], [3]):
        sim.call(b.send(items))
    sim.call(b.ping())
    digest = lambda body: hashlib.sha256(body.encode()).hexdigest()[:8]  # noqa: E731
    effects = sim.events().query("kind == 'effect'")
    url = "https://sink.example/batch"
    assert seen == ["[1,2]", "[3]", "[3]", ""]
    assert [str(k) for k in effects["detail"].map(lambda d: __import__("json").loads(d)["key"])] == [
        f"{url} #{digest('[1,2]')}", f"{url} #{digest('[3]')}", f"{url} #{digest('[3]')}", "https://sink.example/ping"]
    rows = {k: v for k, v, _ in summary_rows(sim.events())}
    assert rows["duplicate effects"].startswith(f"1: SINK(\"{url} #{digest('[3]')}\") on a ×2")
