// An alarm() that throws what is not an Error (tests/workers/js/test_js_thrown_values.py).
export class Thrower {
  constructor(ctx) { this.ctx = ctx; }
  async arm(kind) { await this.ctx.storage.put("kind", kind); await this.ctx.storage.setAlarm(Date.now() + 1000); }
  async alarm() {
    const kind = await this.ctx.storage.get("kind");
    if (kind === "proxy") throw new Proxy({}, { get() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); }, ownKeys() { throw new Error("trap"); } });
    if (kind === "revoked") { const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy; }
    if (kind === "symbol") throw Symbol("boom");
    if (kind === "bare-symbol") throw Symbol();
    if (kind === "undefined") throw undefined;
  }
  async throwNow(kind) {
    if (kind === "proxy") throw new Proxy({}, { get() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); } });
    throw Symbol("now");
  }
}
