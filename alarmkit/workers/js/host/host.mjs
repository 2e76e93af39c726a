// alarmkit's JavaScript host: runs a user's Worker module under the simulation's virtual clock.
//
// Python drives this process over two pipes (fd 3 in, fd 4 out; 4-byte little-endian length + JSON).
// Each message from Python is one event (construct an object, an RPC, an alarm, a fetch, a timer that
// fired, the answer to an outbound call). The host runs it until its turn ends: every microtask has
// drained (setImmediate runs after the microtask queue, node:timers docs), as a workerd turn ends
// when the isolate has nothing left to run (src/workerd/io/io-context.c++). It then sends one report:
// the storage writes of the turn, the promises Python waits for that settled, the timers set, the
// calls to other objects. Reads (get, list, sql.exec, getAlarm) are answered synchronously by Python
// in the middle of the turn (one round trip); writes (put, setAlarm, deleteAlarm) and console output
// ride along with the next message, so a turn that only writes costs one round trip.
//
// Nothing here reads a real clock or real randomness: Date, performance.now, setTimeout/setInterval,
// Math.random and crypto.getRandomValues/randomUUID come from the simulation's clock and seed.

import fs from "node:fs";
import { setImmediate as nodeSetImmediate } from "node:timers";
import { pathToFileURL } from "node:url";
import { webcrypto } from "node:crypto";
import * as cfw from "./cloudflare-workers.mjs";

const IN = Number(process.argv[2]); // the pipe ends Python passed (their numbers in this process)
const OUT = Number(process.argv[3]);
let NOW = 0; // the virtual clock, set by every message from Python
let START = 0; // the simulation's start_ms: performance.now() counts from here
let CUR = null; // the instance whose turn is running (null: the stateless worker)
let report = newReport();

function newReport() {
  return { t: "turn", ops: [], done: [], timers: [], clear: [], waits: [], calls: [] };
}

// -- the pipe -----------------------------------------------------------------------------------
function writeAll(buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(OUT, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
    }
  }
}

function readExact(n) {
  const b = Buffer.allocUnsafe(n);
  let off = 0;
  while (off < n) {
    let r;
    try {
      r = fs.readSync(IN, b, off, n - off, null);
    } catch (e) {
      if (e.code === "EAGAIN") continue;
      throw e;
    }
    if (r === 0) process.exit(0); // Python closed the pipe: the simulation is gone
    off += r;
  }
  return b;
}

function send(obj) {
  const body = Buffer.from(JSON.stringify(obj), "utf8");
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32LE(body.length, 0);
  writeAll(Buffer.concat([head, body]));
}

function recv() {
  const n = readExact(4).readUInt32LE(0);
  const msg = JSON.parse(readExact(n).toString("utf8"));
  if (msg.now !== undefined) NOW = msg.now;
  return msg;
}

// A read answered by Python now, in the middle of the turn: the writes buffered so far go first.
function syncOp(op) {
  const ops = report.ops;
  report.ops = [];
  send({ t: "sync", ops, op });
  const r = recv();
  if (!r.ok) throw jsError(r.error);
  return r.value;
}

function jsError(info) {
  const E = { TypeError, RangeError, SyntaxError }[info.name] || Error;
  const err = new E(info.message);
  if (!(info.name in { TypeError: 1, RangeError: 1, SyntaxError: 1, Error: 1 })) err.name = info.name;
  return err;
}

function errInfo(e) {
  if (e instanceof Error) return { name: e.name, message: String(e.message), stack: String(e.stack || "") };
  let text;
  try {
    text = typeof e === "string" ? e : JSON.stringify(e);
  } catch {
    text = String(e);
  }
  return { name: "Error", message: `Uncaught ${text}`, stack: "" };
}

// Values cross to Python as JSON (see docs/workers-js.md: what survives the trip).
function clone(v) {
  if (v === undefined) return null;
  return JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)) ?? "null");
}

// -- the virtual clock and the seeded random source -------------------------------------------
const RealDate = Date;
class VirtualDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(NOW);
    else super(...args);
  }
  static now() {
    return NOW;
  }
}
globalThis.Date = VirtualDate;
Object.defineProperty(globalThis, "performance", { value: { now: () => NOW - START, timeOrigin: START }, configurable: true });

let rngState = [0, 0, 0, 0];
function seedRandom(seed) {
  // splitmix32 expands the seed into xoshiro128**'s four words
  let s = (seed >>> 0) ^ 0x9e3779b9;
  for (let i = 0; i < 4; i++) {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    rngState[i] = (z ^ (z >>> 16)) >>> 0;
  }
}
function nextU32() {
  const s = rngState;
  const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
  const t = s[1] << 9;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 11);
  return result;
}
function rotl(x, k) {
  return (x << k) | (x >>> (32 - k));
}
Math.random = () => (nextU32() * 2 ** 21 + (nextU32() >>> 11)) / 2 ** 53;
function getRandomValues(arr) {
  const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = nextU32() & 0xff;
  return arr;
}
function randomHex(nbytes) {
  return Array.from(getRandomValues(new Uint8Array(nbytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}
function randomUUID() {
  const b = getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
Object.defineProperty(globalThis, "crypto", {
  value: { getRandomValues, randomUUID, subtle: webcrypto.subtle },
  configurable: true,
});

// -- timers on the virtual clock ----------------------------------------------------------------
let timerSeq = 0;
const timers = new Map(); // id -> {fn, args, ms, interval, iid}
function addTimer(fn, ms, args, interval) {
  if (typeof fn !== "function") throw new TypeError("setTimeout/setInterval need a function (a string is not evaluated)");
  const id = ++timerSeq;
  const delay = Math.max(0, Math.floor(Number(ms) || 0));
  timers.set(id, { fn, args, ms: delay, interval, iid: CUR });
  report.timers.push([id, CUR, interval && delay === 0 ? 1 : delay]);
  return id;
}
globalThis.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
globalThis.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
globalThis.clearTimeout = globalThis.clearInterval = (id) => {
  const n = Number(id);
  if (timers.delete(n)) report.clear.push(n);
};
globalThis.setImmediate = undefined; // workerd has none; the host keeps Node's (imported above)

// -- console into the journal --------------------------------------------------------------------
function show(x) {
  if (typeof x === "string") return x;
  if (x instanceof Error) return `${x.name}: ${x.message}`;
  try {
    return JSON.stringify(x) ?? String(x);
  } catch {
    return String(x);
  }
}
for (const level of ["log", "info", "warn", "error", "debug"]) {
  console[level] = (...args) => report.ops.push(["console", CUR, level, args.map(show).join(" ")]);
}

// -- outbound calls: every one goes through Python (another object, a stub binding) -------------
let nidSeq = 0;
const pending = new Map(); // nid -> {resolve, reject, post}
function outbound(binding, key, method, args, post) {
  const nid = ++nidSeq;
  report.calls.push([nid, CUR, binding, key, method, args]);
  return new Promise((resolve, reject) => pending.set(nid, { resolve, reject, post }));
}

// a promise Python waits for (a blockConcurrencyWhile, a waitUntil)
function waitFor(kind, promise) {
  const nid = ++nidSeq;
  report.waits.push([nid, CUR, kind]);
  track("n" + nid, promise, CUR);
  return nid;
}

function track(key, promise, iid) {
  promise.then(
    (v) => {
      CUR = iid;
      report.done.push([key, true, clone(v)]);
    },
    (e) => {
      CUR = iid;
      report.done.push([key, false, errInfo(e)]);
    },
  );
}

function attempt(fn) {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

// -- Request / Response across the pipe ----------------------------------------------------------
function requestOf(input, init) {
  const req = input instanceof Request && init === undefined ? input : new Request(input, init);
  return req;
}
async function requestDict(req) {
  const body = req.body === null ? null : await req.text();
  return { url: req.url, method: req.method, headers: [...req.headers], body };
}
function requestFrom(d) {
  const init = { method: d.method, headers: d.headers };
  if (d.body !== null && d.body !== undefined && d.method !== "GET" && d.method !== "HEAD") init.body = d.body;
  return new Request(d.url, init);
}
async function responseDict(res) {
  if (!(res instanceof Response)) throw new TypeError(`a fetch handler must return a Response, got ${show(res)}`);
  return { status: res.status, headers: [...res.headers], body: await res.text() };
}
function responseFrom(d) {
  const nobody = d.status === 204 || d.status === 304 || d.status === 101;
  return new Response(nobody ? null : d.body, { status: d.status, headers: d.headers });
}

// -- storage ----------------------------------------------------------------------------------------
function checkKey(key) {
  if (typeof key !== "string") throw new TypeError(`storage keys are strings, got ${show(key)}`);
}

class SqlCursor {
  constructor(r) {
    this.columnNames = r.cols;
    this._rows = r.rows;
    this._i = 0;
    this.rowsRead = r.read;
    this.rowsWritten = r.written;
  }
  _obj(row) {
    const o = {};
    this.columnNames.forEach((c, i) => (o[c] = row[i]));
    return o;
  }
  next() {
    if (this._i >= this._rows.length) return { done: true, value: undefined };
    return { done: false, value: this._obj(this._rows[this._i++]) };
  }
  [Symbol.iterator]() {
    return this;
  }
  toArray() {
    const out = [];
    for (const row of this) out.push(row);
    return out;
  }
  one() {
    const left = this._rows.length - this._i;
    if (left !== 1) throw new Error(`Expected exactly one result from SQL query, but got ${left ? "multiple results" : "no results"}.`);
    return this.next().value;
  }
  *raw() {
    while (this._i < this._rows.length) yield this._rows[this._i++];
  }
}

class SqlStorage {
  constructor(iid) {
    this._iid = iid;
  }
  exec(query, ...bindings) {
    return new SqlCursor(syncOp(["sql", this._iid, String(query), bindings.map((b) => (b === undefined ? null : b))]));
  }
  get databaseSize() {
    return syncOp(["dbsize", this._iid]);
  }
}

function alarmTime(t) {
  const ms = t instanceof RealDate ? t.getTime() : t;
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new TypeError("The value cannot be converted because it is not a valid Date.");
  }
  if (ms <= 0) throw new TypeError("setAlarm() cannot be called with an alarm time <= 0");
  return ms;
}

class Storage {
  constructor(iid) {
    this._iid = iid;
    this.sql = new SqlStorage(iid);
  }
  async get(key) {
    if (Array.isArray(key)) {
      key.forEach(checkKey);
      return new Map(Object.entries(syncOp(["get", this._iid, key])));
    }
    checkKey(key);
    const v = syncOp(["get", this._iid, key]);
    return v === null ? undefined : v;
  }
  async put(key, value) {
    if (typeof key === "object" && key !== null) {
      for (const k of Object.keys(key)) report.ops.push(["put", this._iid, k, clone(key[k])]);
      return;
    }
    checkKey(key);
    if (value === undefined) throw new TypeError("storage.put() needs a value (undefined cannot be stored)");
    report.ops.push(["put", this._iid, key, clone(value)]);
  }
  async delete(key) {
    if (Array.isArray(key)) key.forEach(checkKey);
    else checkKey(key);
    return syncOp(["delete", this._iid, key]);
  }
  async list(options = {}) {
    return new Map(syncOp(["list", this._iid, options]));
  }
  async deleteAll() {
    syncOp(["deleteAll", this._iid]);
  }
  transactionSync(fn) {
    syncOp(["tx", this._iid, "begin"]);
    let out;
    try {
      out = fn();
    } catch (e) {
      syncOp(["tx", this._iid, "rollback"]);
      throw e;
    }
    syncOp(["tx", this._iid, "commit"]);
    return out;
  }
  async transaction(fn) {
    syncOp(["tx", this._iid, "begin"]);
    const txn = Object.create(this, { rollback: { value: () => { throw new Error("transaction rolled back"); } } });
    try {
      const out = await fn(txn);
      syncOp(["tx", this._iid, "commit"]);
      return out;
    } catch (e) {
      syncOp(["tx", this._iid, "rollback"]);
      throw e;
    }
  }
  sync() {
    // resolves in a later turn, once the writes so far are committed (workerd: after the flush)
    return outbound(null, null, "sync", []);
  }
  async getAlarm() {
    return syncOp(["getAlarm", this._iid]);
  }
  async setAlarm(t) {
    report.ops.push(["setAlarm", this._iid, alarmTime(t)]);
  }
  async deleteAlarm() {
    report.ops.push(["deleteAlarm", this._iid]);
  }
}

class DurableObjectId {
  constructor(hex, name) {
    this._hex = hex;
    if (name !== undefined) this.name = name;
  }
  toString() {
    return this._hex;
  }
  equals(other) {
    return other instanceof DurableObjectId && other._hex === this._hex;
  }
}

class DurableObjectState {
  constructor(iid, id) {
    this._iid = iid;
    this.id = id;
    this.storage = new Storage(iid);
  }
  blockConcurrencyWhile(fn) {
    const p = attempt(fn);
    waitFor("bcw", p);
    return p;
  }
  waitUntil(promise) {
    waitFor("waitUntil", Promise.resolve(promise));
  }
  abort(reason, options) {
    const retry = !(options && options.retryAlarm === false); // workerd PR 6996: abort(reason, {retryAlarm})
    report.ops.push(["abort", this._iid, reason === undefined ? "aborted" : show(reason), retry]);
    throw new Error(`Durable Object aborted: ${reason === undefined ? "aborted" : show(reason)}`);
  }
}

// -- the module, its env and its objects -------------------------------------------------------
let mod = null;
let env = null;
const instances = new Map(); // iid -> {obj, ctx}
const uniqueIds = new Set(); // ids newUniqueId made: their objects have no name

function hexOf(binding, name) {
  // a stable 64-hex id per name (workerd derives one from the name with a key: this is a stand-in)
  let h1 = 0x811c9dc5, h2 = 0x01000193;
  const s = `${binding}\u0000${name}`;
  let out = "";
  for (let round = 0; round < 8; round++) {
    for (let i = 0; i < s.length; i++) {
      h1 = Math.imul(h1 ^ s.charCodeAt(i), 0x01000193) >>> 0;
      h2 = Math.imul(h2 ^ (s.charCodeAt(i) + round), 0x5bd1e995) >>> 0;
    }
    out += ((h1 ^ h2) >>> 0).toString(16).padStart(8, "0");
  }
  return out;
}

function makeStub(binding, id) {
  const key = id.name !== undefined ? id.name : id.toString();
  return new Proxy({}, {
    get(_t, prop) {
      if (prop === "id") return id;
      if (prop === "name") return id.name;
      if (typeof prop !== "string" || prop === "then") return undefined;
      if (prop === "fetch") {
        return async (input, init) => outbound(binding, key, "fetch", [await requestDict(requestOf(input, init))], responseFrom);
      }
      return (...args) => outbound(binding, key, prop, clone(args));
    },
  });
}

class Namespace {
  constructor(binding) {
    this._binding = binding;
  }
  idFromName(name) {
    return new DurableObjectId(hexOf(this._binding, String(name)), String(name));
  }
  newUniqueId() {
    const hex = randomHex(32);
    uniqueIds.add(hex);
    return new DurableObjectId(hex);
  }
  idFromString(hex) {
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`Invalid Durable Object ID: must be 64 hex digits, got ${show(hex)}`);
    return new DurableObjectId(hex);
  }
  get(id) {
    if (!(id instanceof DurableObjectId)) throw new TypeError("get() needs an id from idFromName, newUniqueId or idFromString");
    return makeStub(this._binding, id);
  }
  getByName(name) {
    return this.get(this.idFromName(name));
  }
}

function makeEnv(bindings, services) {
  const base = {};
  for (const b of Object.keys(bindings)) base[b] = new Namespace(b);
  for (const s of services) {
    base[s] = {
      fetch: async (input, init) => outbound(s, null, "fetch", [await requestDict(requestOf(input, init))], responseFrom),
    };
  }
  return new Proxy(base, {
    get(t, prop) {
      if (typeof prop !== "string" || prop in t || prop === "then" || prop === "toJSON") return t[prop];
      throw new Error(
        `env.${prop} is not bound under alarmkit's JavaScript host; bind it when loading the worker, ` +
          `e.g. bindings={"${prop}": "ClassName"} for a Durable Object or bindings={"${prop}": handler} for a service stub`,
      );
    },
    has(t, prop) {
      return prop in t;
    },
  });
}

globalThis.fetch = (input) => {
  const url = input instanceof Request ? input.url : String(input);
  throw new TypeError(
    `fetch(${JSON.stringify(url)}) is refused under alarmkit's JavaScript host: outbound network calls are not simulated; ` +
      `bind a stub instead (bindings={"API": handler}) and call env.API.fetch(...)`,
  );
};

function methodsOf(cls) {
  const names = new Set();
  for (let p = cls.prototype; p && p !== Object.prototype && p !== cfw.DurableObject.prototype; p = Object.getPrototypeOf(p)) {
    for (const n of Object.getOwnPropertyNames(p)) {
      if (n !== "constructor" && !n.startsWith("_") && typeof Object.getOwnPropertyDescriptor(p, n).value === "function") names.add(n);
    }
  }
  return [...names].sort();
}

// The module as wrangler bundles it: esbuild, ES module output, TypeScript stripped (no type check,
// as wrangler), `cloudflare:workers` resolved to this host's copy.
async function bundle(entry, esbuildPath) {
  const esbuild = await import(pathToFileURL(esbuildPath).href);
  const cf = new URL("./cloudflare-workers.mjs", import.meta.url).href;
  const out = await (esbuild.build || esbuild.default.build)({
    entryPoints: [entry],
    absWorkingDir: entry.slice(0, entry.lastIndexOf("/")) || "/",
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    logLevel: "silent",
    plugins: [{
      name: "alarmkit-cloudflare",
      setup(b) {
        b.onResolve({ filter: /^cloudflare:workers$/ }, () => ({ path: cf, external: true }));
        b.onResolve({ filter: /^(cloudflare|node):/ }, (a) => ({ path: a.path, external: true }));
      },
    }],
  });
  return out.outputFiles[0].text;
}

async function load(msg) {
  START = msg.start;
  seedRandom(msg.seed);
  let code;
  try {
    code = await bundle(msg.entry, msg.esbuild);
  } catch (e) {
    const errors = e.errors || [];
    const first = errors.length ? errors[0] : null;
    const where = first && first.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : "";
    return { t: "error", error: { name: "BuildError", message: first ? `${where}${first.text}` : String(e.message || e) } };
  }
  try {
    mod = await import("data:text/javascript;base64," + Buffer.from(code, "utf8").toString("base64"));
  } catch (e) {
    return { t: "error", error: errInfo(e) };
  }
  env = makeEnv(msg.bindings, msg.services);
  Object.assign(cfw.env, env);
  const classes = {};
  for (const [binding, name] of Object.entries(msg.bindings)) {
    const cls = mod[name];
    if (typeof cls !== "function") {
      const exported = Object.keys(mod).filter((k) => typeof mod[k] === "function").sort();
      return { t: "error", error: { name: "BindingError", message: `bindings["${binding}"] names class ${name}, which the module does not export; it exports: ${JSON.stringify(exported)}` } };
    }
    classes[binding] = methodsOf(cls);
  }
  const dflt = mod.default;
  const hasFetch = !!dflt && (typeof dflt.fetch === "function" || (typeof dflt === "function" && typeof dflt.prototype.fetch === "function"));
  return { t: "loaded", classes, fetch: hasFetch };
}

// -- events ---------------------------------------------------------------------------------------
function construct(msg) {
  const cls = mod[msg.cls];
  const unique = uniqueIds.has(msg.name);
  const hex = unique ? msg.name : hexOf(msg.binding, msg.name);
  const id = new DurableObjectId(hex, unique || msg.idname === null ? undefined : msg.idname);
  const ctx = new DurableObjectState(msg.iid, id);
  const rec = { obj: null, ctx };
  instances.set(msg.iid, rec);
  if (msg.drop !== null) instances.delete(msg.drop); // the instance this one replaces is gone
  try {
    rec.obj = new cls(ctx, env);
    report.done.push(["p" + msg.pid, true, null]);
  } catch (e) {
    instances.delete(msg.iid);
    report.done.push(["p" + msg.pid, false, errInfo(e)]);
  }
}

function instance(iid) {
  const rec = instances.get(iid);
  if (!rec || !rec.obj) throw new Error(`internal: no live instance ${iid}`);
  return rec.obj;
}

function dispatch(msg) {
  switch (msg.t) {
    case "new":
      CUR = msg.iid;
      return construct(msg);
    case "call": {
      CUR = msg.iid;
      const obj = instance(msg.iid);
      const p = attempt(() => {
        if (typeof obj[msg.method] !== "function") throw new TypeError(`The RPC receiver does not implement the method "${msg.method}".`);
        return obj[msg.method](...msg.args);
      });
      return track("p" + msg.pid, p, CUR);
    }
    case "alarm": {
      CUR = msg.iid;
      const obj = instance(msg.iid);
      // workerd's AlarmInvocationInfo (src/workerd/api/actor-state.h): retryCount, isRetry, scheduledTime (ms)
      const info = { retryCount: msg.info[0], isRetry: msg.info[0] > 0, scheduledTime: msg.info[1] };
      return track("p" + msg.pid, attempt(() => {
        if (typeof obj.alarm !== "function") throw new Error("alarm() is not defined on this Durable Object class");
        return obj.alarm(info);
      }), CUR);
    }
    case "fetch": {
      CUR = msg.iid;
      const req = requestFrom(msg.req);
      const p = attempt(() => {
        if (msg.iid !== null) return instance(msg.iid).fetch(req);
        const d = mod.default;
        const ctx = { waitUntil: (pr) => waitFor("waitUntil", Promise.resolve(pr)), passThroughOnException() {} };
        if (typeof d === "function") return new d(ctx, env).fetch(req);
        return d.fetch(req, env, ctx);
      }).then(responseDict);
      return track("p" + msg.pid, p, CUR);
    }
    case "timer": {
      const t = timers.get(msg.id);
      if (!t) return; // cleared meanwhile
      CUR = t.iid;
      if (t.interval) report.timers.push([msg.id, t.iid, t.ms === 0 ? 1 : t.ms]);
      else timers.delete(msg.id);
      try {
        t.fn(...t.args);
      } catch (e) {
        report.ops.push(["console", CUR, "error", `Uncaught ${show(e)} (in a timer callback)`]);
      }
      return;
    }
    case "settle": {
      const p = pending.get(msg.nid);
      if (!p) return;
      pending.delete(msg.nid);
      CUR = msg.iid;
      if (msg.ok) p.resolve(p.post ? p.post(msg.value) : msg.value);
      else p.reject(jsError(msg.value));
      return;
    }
    case "drop":
      instances.delete(msg.iid);
      for (const [id, t] of timers) if (t.iid === msg.iid) timers.delete(id);
      return;
    default:
      throw new Error(`internal: unknown message ${msg.t}`);
  }
}

let busyNs = 0n; // the host's own time per message: from the message read to its report sent
let began = 0n;
function finish() {
  const r = report;
  report = newReport();
  send(r);
  busyNs += process.hrtime.bigint() - began;
  loop();
}

function loop() {
  const msg = recv();
  if (msg.t === "load") {
    load(msg).then((r) => {
      send(r);
      loop();
    });
    return;
  }
  if (msg.t === "exit") process.exit(0);
  if (msg.t === "stats") {
    send({ t: "stats", busy_ms: Number(busyNs / 1000n) / 1000 });
    return loop();
  }
  began = process.hrtime.bigint();
  try {
    dispatch(msg);
  } catch (e) {
    report.ops.push(["console", CUR, "error", `alarmkit host: ${show(e)}`]);
  }
  nodeSetImmediate(finish);
}

send({ t: "ready", node: process.versions.node });
loop();
