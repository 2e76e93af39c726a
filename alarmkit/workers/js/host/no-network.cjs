// Preloaded (`node -r no-network.cjs`) into wrangler's own dry run when `alarmkit worker --compare-wrangler`
// compares bundles: every network connection is refused before it leaves the machine (an update check, a
// metrics ping), so the comparison runs offline as the rest of alarmkit does. A connection to a local
// socket file (a pipe, as esbuild's service uses) is not the network and goes on. Each refusal is one
// stderr line starting "alarmkit-no-network:", which alarmkit counts and reports.
"use strict";
const net = require("node:net");

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const opts = args[0] && typeof args[0] === "object" && !Array.isArray(args[0]) ? args[0] : null;
  const local = opts ? typeof opts.path === "string" : typeof args[0] === "string" && Number.isNaN(Number(args[0]));
  if (local) return connect.apply(this, args);
  const host = opts ? opts.host || "localhost" : typeof args[1] === "string" ? args[1] : "localhost";
  const port = opts ? opts.port : args[0];
  process.stderr.write(`alarmkit-no-network: refused a connection to ${host}:${port} (the comparison runs offline)\n`);
  const err = Object.assign(new Error(`alarmkit refused a connection to ${host}:${port}: no network`),
                            { code: "ECONNREFUSED", syscall: "connect" });
  process.nextTick(() => this.destroy(err));
  return this;
};
