// `cloudflare:workers` as alarmkit's JavaScript host provides it: the base classes a user's module
// extends and the module-level `env` (workerd: src/cloudflare/internal/workers.d.ts; src/workerd/api/
// worker-rpc.c++ for DurableObject and WorkerEntrypoint). host.mjs fills `env` once the module loads.

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

export const env = {};
