// Asked of real workerd and of alarmkit's JS host alike (test_js_workerd_surface.py): the answers must agree
import { DurableObject } from "cloudflare:workers";
import * as fs from "node:fs";
import path from "path";
const order = [];

export class P extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    order.push("ctor start");
    ctx.blockConcurrencyWhile(async () => { order.push(`bcw sees ready=${this.ready}`); });
    this.ready = true;
    this.shadowed = () => "instance";  // an own property shadowing the prototype's method
    order.push("ctor end");
  }
  field = "a field";
  arrow = () => "an arrow field";
  shadowed() { return "prototype"; }
  get count() { return order.length; }
  order() { return order; }
  _private() { return "underscore ok"; }
  async rpc() {
    const other = this.env.P.getByName("other");
    const out = { private: await other._private() };
    out.getter = await other.count;  // a getter read over RPC
    for (const name of ["field", "nothing"]) {
      try { out[`read ${name}`] = await other[name]; } catch (e) { out[`read ${name}`] = `${e.name}: ${e.message}`; }
    }
    for (const name of ["webSocketMessage", "alarm", "constructor", "dup", "shadowed", "arrow", "field", "nope"]) {
      try { await other[name](); out[name] = "no error"; } catch (e) { out[name] = `${e.name}: ${e.message}`; }
    }
    return out;
  }
  async sockets() {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server, ["room:a", "user:b"]);
    const out = { all: this.ctx.getWebSockets().length, tagged: this.ctx.getWebSockets("user:b").length,
      none: this.ctx.getWebSockets("x").length, tags: this.ctx.getTags(server), auto: this.ctx.getWebSocketAutoResponse(),
      stamp: this.ctx.getWebSocketAutoResponseTimestamp(server), open: [WebSocket.OPEN, WebSocket.READY_STATE_OPEN],
      attach: server.deserializeAttachment(), rs: server.readyState, timeout: this.ctx.getHibernatableWebSocketEventTimeout() ?? null };
    out.members = { bufferedAmount: server.bufferedAmount, props: this.ctx.props };
    try { this.ctx.getTags(client); } catch (e) { out.tagsOfOther = `${e.name}: ${e.message}`; }
    try { client.send("x"); } catch (e) { out.sendUnaccepted = `${e.name}: ${e.message}`; }
    return out;
  }
  webSocketMessage(ws, m) {}
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/boom") throw new ReferenceError("nope is not defined");
    const p = env.P.getByName("a");
    return Response.json({
      order: await p.order(), rpc: await p.rpc(), sockets: await p.sockets(),
      env: { nope: env.NOPE === undefined, processEnv: process.env, fs: typeof fs.readFileSync, ext: path.extname("a.txt") },
      globals: { nav: navigator.userAgent, wait: typeof scheduler.wait, iter: [1, 2, 3].values().filter((x) => x > 1).toArray(),
        bookmark: typeof env.P, pair: typeof WebSocketPair, exit: typeof process.exit },
    });
  },
};
