// The runtime surface real libraries touch (tests/workers/js/test_js_surface.py): Node built-ins under
// nodejs_compat, AsyncLocalStorage across virtual timers, WebSockets and the hibernation API, caches,
// cloudflare:email, exports, RPC names, blockConcurrencyWhile's order
import { DurableObject, exports, waitUntil, RpcTarget } from "cloudflare:workers";
import { EmailMessage } from "cloudflare:email";
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Buffer } from "node:buffer";
import { setTimeout as sleep } from "node:timers/promises";
import * as fs from "node:fs";
import { EventEmitter } from "events";
import nodeProcess from "node:process";
const path = require("path");

const als = new AsyncLocalStorage();
const order = [];

export class Surface extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    order.push("ctor start");
    ctx.blockConcurrencyWhile(async () => {
      order.push(`bcw sees this.ready=${this.ready}`);
    });
    this.ready = true;
    order.push("ctor end");
  }
  order() {
    return order;
  }
  node() {
    const e = new EventEmitter();
    let heard = null;
    e.on("x", (v) => (heard = v));
    e.emit("x", 7);
    return {
      ext: path.extname("a/b.txt"),
      hash: createHash("sha256").update("abc").digest("hex").slice(0, 16),
      b64: Buffer.from("hi").toString("base64"),
      heard,
      rand: randomBytes(4).toString("hex"),
      uuid: randomUUID(),
    };
  }
  readFile() {
    return fs.readFileSync("/etc/hostname", "utf8");
  }
  async als() {
    return await als.run({ who: "ann" }, () => new Promise((resolve) => {
      setTimeout(() => resolve(als.getStore()), 250);
    }));
  }
  async sleepy() {
    const t0 = Date.now();
    await sleep(500);
    return Date.now() - t0;
  }
  async sockets() {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server, ["room:a", "user:ann"]);
    server.serializeAttachment({ n: 1 });
    const got = [];
    client.accept();
    client.addEventListener("message", (ev) => got.push(ev.data));
    client.send("ping");
    await new Promise((r) => setTimeout(r, 0));
    this.ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    return {
      all: this.ctx.getWebSockets().length,
      tagged: this.ctx.getWebSockets("room:a").length,
      none: this.ctx.getWebSockets("room:b").length,
      tags: this.ctx.getTags(server),
      attachment: server.deserializeAttachment(),
      got,
      auto: this.ctx.getWebSocketAutoResponse().response,
      stamp: this.ctx.getWebSocketAutoResponseTimestamp(server),
      open: WebSocket.OPEN === 1 && WebSocket.READY_STATE_OPEN === 1,
    };
  }
  webSocketMessage(ws, msg) {
    ws.send(`echo ${msg} at ${Date.now()}`);
  }
  async cache() {
    const hit = await caches.default.match("https://example.com/x");
    await caches.default.put("https://example.com/x", new Response("v"));
    return hit === undefined;
  }
  email() {
    const m = new EmailMessage("a@example.com", "b@example.com", "raw");
    return [m.from, m.to];
  }
  exportsSeen() {
    return [typeof exports.Surface.idFromName, typeof this.ctx.exports.Surface.getByName, this.env.NOT_BOUND === undefined];
  }
  proc() {
    let exit = null;
    try {
      process.exit(1);
    } catch (e) {
      exit = `${e.name}: ${e.message}`;
    }
    return { env: process.env, same: nodeProcess.env === process.env, hr: process.hrtime(), up: process.uptime(),
      home: process.env.HOME ?? null, exit };
  }
  _private() {
    return "underscore ok";
  }
  async callPrivate() {
    return await this.env.SURFACE.getByName("other")._private();
  }
  async callReserved() {
    return await this.env.SURFACE.getByName("other").webSocketMessage();
  }
  get answer() {
    return `42 from ${this.ctx.id.name}`;
  }
  async target() {   // an RpcTarget crosses by reference, as on workerd
    return { counter: new (class Counter extends RpcTarget { n = 1; })() };
  }
  async readGetter() {
    return await this.env.SURFACE.getByName("other").answer;   // a getter read over RPC
  }
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/boom") throw new ReferenceError("nope is not defined");
    return new Response("ok");
  },
};
