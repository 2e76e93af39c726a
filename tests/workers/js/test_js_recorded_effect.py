"""``effect(ctx, name, key)`` of recorded.js is an effect under the JS host too, as on real workerd:
the same module journals the same effects on both sides, so ``alarmkit diff`` sees no false divergence."""

import shutil
from pathlib import Path

import alarmkit as ak
from alarmkit.realruns.record import JS_DIR

WORKER = """
import { DurableObject } from "cloudflare:workers";
import { recorded, effect } from "./recorded.js";

class MyLedger extends DurableObject {
  async grant(id, ttl) {
    await this.ctx.storage.put("lease:" + id, Date.now() + ttl);
    await this.ctx.storage.setAlarm(Date.now() + ttl);
  }
  async alarm() {
    for (const [key] of await this.ctx.storage.list({ prefix: "lease:" })) {
      effect(this.ctx, "revoke", key.slice(6));
      await this.ctx.storage.delete(key);
    }
  }
}
export class Ledger extends recorded(MyLedger) {}
export default { async fetch() { return new Response("ok"); } };
"""


def test_an_effect_of_recorded_js_is_an_effect_in_the_js_host(js_host, tmp_path):
    shutil.copy(Path(JS_DIR) / "recorded.js", tmp_path / "recorded.js")
    (tmp_path / "worker.js").write_text(WORKER)
    sim = ak.Simulation(profile="workerd", seed=0, fire_latency="exact")
    w = sim.load_worker(str(tmp_path / "worker.js"), bindings={"LEDGER": "Ledger"})
    sim.call(w.env.LEDGER.getByName("a").grant("x", 1_000))
    sim.run()
    ev = sim.events()
    effects = ev[ev["kind"] == "effect"]
    assert effects["t_ms"].tolist() == [1_002] and effects["object_id"].tolist() == ["a"]
    assert '"name":"revoke"' in effects["detail"].iloc[0] and '"key":"x"' in effects["detail"].iloc[0]
    # the log line stays in the journal as the console line it is, too (nothing journaled is dropped)
    console = ev[ev["kind"] == "console"]["detail"]
    assert sum("revoke" in d and "effect" in d for d in console) == 1
