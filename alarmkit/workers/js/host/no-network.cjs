// Preloaded (`node -r no-network.cjs`) into wrangler's own dry run when `alarmkit worker --compare-wrangler`
// compares bundles: every network connection is refused before it leaves the machine (an update check, a
// metrics ping), so the comparison runs offline as the rest of alarmkit does. A connection to a local
// socket file (a pipe, as esbuild's service uses) is not the network and goes on. Each refusal is one
// stderr line starting "alarmkit-no-network:", which alarmkit counts and reports. NODE_OPTIONS carries it
// into every Node process the dry run starts (a build command's npm, a child node); a program that is not
// Node (curl in a build command) is not covered, and said so (docs/workers.md).
"use strict";
const net = require("node:net");

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  if (Array.isArray(args[0])) args = args[0];  // net.connect() hands its normalized [options, callback] on
  const opts = args[0] && typeof args[0] === "object" && !Array.isArray(args[0]) ? args[0] : null;
  const local = opts ? typeof opts.path === "string" : typeof args[0] === "string" && Number.isNaN(Number(args[0]));
  if (local) return connect.apply(this, arguments);
  const host = opts ? opts.host || "localhost" : typeof args[1] === "string" ? args[1] : "localhost";
  const port = opts ? opts.port : args[0];
  process.stderr.write(`alarmkit-no-network: refused a connection to ${host}:${port} (the comparison runs offline)\n`);
  const err = Object.assign(new Error(`alarmkit refused a connection to ${host}:${port}: no network`),
                            { code: "ECONNREFUSED", syscall: "connect" });
  process.nextTick(() => this.destroy(err));
  return this;
};

// UDP and DNS do not go through net.Socket: a datagram sent, a name resolved (dns.lookup asks the system's
// resolver, dns.resolve* and dns.Resolver send their own queries) is refused the same way.
function refused(what) {
  process.stderr.write(`alarmkit-no-network: refused ${what} (the comparison runs offline)\n`);
  return Object.assign(new Error(`alarmkit refused ${what}: no network`), { code: "ECONNREFUSED" });
}
const dgram = require("node:dgram");
dgram.Socket.prototype.send = function (msg, ...rest) {
  const done = rest.find((a) => typeof a === "function");
  const err = refused("a UDP datagram");
  process.nextTick(() => (done ? done(err) : this.emit("error", err)));
};
dgram.Socket.prototype.connect = function (port, address, done) {
  const err = refused(`a UDP connection to ${address || "localhost"}:${port}`);
  process.nextTick(() => this.emit("error", err));
};
const dns = require("node:dns");
const failing = (name) => function (...args) {
  const done = args.find((a) => typeof a === "function");
  const err = refused(`a DNS lookup of ${args[0]}`);
  if (done) process.nextTick(() => done(err));
  else throw err;
};
const failingAsync = (name) => async (host) => { throw refused(`a DNS lookup of ${host}`); };
for (const name of Object.keys(dns)) {
  if (name === "lookup" || name === "lookupService" || name === "reverse" || name.startsWith("resolve")) {
    dns[name] = failing(name);
    if (dns.promises && typeof dns.promises[name] === "function") dns.promises[name] = failingAsync(name);
  }
}
for (const R of [dns.Resolver, dns.promises && dns.promises.Resolver]) {
  if (!R) continue;
  for (const name of Object.getOwnPropertyNames(R.prototype)) {
    if (name === "reverse" || name.startsWith("resolve")) {
      R.prototype[name] = R === dns.Resolver ? failing(name) : failingAsync(name);
    }
  }
}
