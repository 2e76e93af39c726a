// What a few members of the surface are, asked on real workerd and under alarmkit's host alike
// (tests/workers/js/test_js_surface_check.py): the ones the host gives as values rather than behaviour
// (in-memory storage on workerd has no SQL, so the SQL API is not asked here).
import { DurableObject } from "cloudflare:workers";

export class P extends DurableObject {
  values() {
    return {
      props: this.ctx.props === undefined ? "undefined" : typeof this.ctx.props,
      propsJson: JSON.stringify(this.ctx.props ?? null),
      propsKeys: this.ctx.props && typeof this.ctx.props === "object" ? Object.keys(this.ctx.props) : null,
      container: this.ctx.container === undefined ? "undefined" : typeof this.ctx.container,
      hasProps: "props" in this.ctx,
      self: typeof self !== "undefined" && self === globalThis,
      userAgent: navigator.userAgent,
      setImmediate: typeof setImmediate,
      clearImmediate: typeof clearImmediate,
    };
  }
  async immediate() {   // under nodejs_compat: a setTimeout(0) set first runs first; a cleared one never
    const order = [];
    let handle = "none";
    if (typeof setImmediate !== "function") return { order, handle };
    await new Promise((done) => {
      setTimeout(() => order.push("timeout 0"), 0);
      handle = typeof setImmediate(() => order.push("immediate"));
      clearImmediate(setImmediate(() => order.push("cleared")));
      setTimeout(done, 5);
    });
    return { order, handle };
  }
}

export default {
  async fetch(request, env) {
    const p = env.P.get(env.P.idFromName("p"));
    return Response.json({ ...(await p.values()), ...(await p.immediate()) });
  },
};
