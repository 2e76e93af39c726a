// `cloudflare:workers` as alarmkit's JavaScript host provides it: the base classes a user's module
// extends, the module-level `env` and `exports` (workerd: src/cloudflare/internal/workers.d.ts; src/workerd/api/
// worker-rpc.c++ for DurableObject and WorkerEntrypoint). host.mjs fills `env` once the module loads.

import { waitFor } from "./sandbox.mjs";

export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

export class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

export class RpcTarget {}
// workerd passes an RpcTarget by reference (the receiver gets a stub and calls back); values cross to Python
// as JSON here, so one is refused by name where it would cross (state.mjs)
RpcTarget.prototype[Symbol.for("alarmkit.rpcTarget")] = true;

export const env = {};

// the module's own exports as workerd's loopback bindings (ctx.exports too): a Durable Object class
// bound in the config is its namespace; any other exported class a DurableObjectClass (facets.mjs)
export const exports = {};

// workerd's `waitUntil` from cloudflare:workers: the promise is kept alive past the event
export function waitUntil(promise) {
  waitFor("waitUntil", Promise.resolve(promise));
}
