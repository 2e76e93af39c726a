// The globals a module sees under the host: the virtual clock, seeded randomness, virtual timers,
// console into the journal, outbound calls through Python, and the refused global fetch.
import { webcrypto } from "node:crypto";
import { AsyncResource } from "node:async_hooks";
import { S, attempt, clockNow, clone, errInfo, show } from "./state.mjs";
import { unsupported } from "./refused.mjs";

// -- the virtual clock and the seeded random source -------------------------------------------
export const RealDate = Date;
class VirtualDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(clockNow());
    else super(...args);
  }
  static now() {
    return clockNow();
  }
}
Object.defineProperty(VirtualDate, "name", { value: "Date" }); // what x.constructor.name says in workerd
globalThis.Date = VirtualDate;
Object.defineProperty(globalThis, "performance", { value: { now: () => clockNow() - S.start, timeOrigin: S.start }, configurable: true });

let rngState = [0, 0, 0, 0];
export function seedRandom(seed) {
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
export function randomHex(nbytes) {
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
export const timers = new Map(); // id -> {fn, args, ms, interval, iid}
function addTimer(fn, ms, args, interval) {
  if (typeof fn !== "function") throw new TypeError("setTimeout/setInterval need a function (a string is not evaluated)");
  const id = ++timerSeq;
  const delay = Math.max(0, Math.floor(Number(ms) || 0));
  // AsyncResource.bind: the callback runs in the async context (AsyncLocalStorage) it was set in, as workerd's do
  timers.set(id, { fn: AsyncResource.bind(fn), args, ms: delay, interval, iid: S.cur });
  S.report.timers.push([id, S.cur, interval && delay === 0 ? 1 : delay]);
  return id;
}
globalThis.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
globalThis.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
globalThis.clearTimeout = globalThis.clearInterval = (id) => {
  const n = Number(id);
  if (timers.delete(n)) S.report.clear.push(n);
};
// setImmediate/clearImmediate: workerd gives them under nodejs_compat only (asked of workerd 1.20261117.1:
// undefined at 2026-08-03, functions with the flag or from 2026-08-04; an object handle; a setTimeout(0)
// set before it runs first), so the load installs them (installImmediate); the host keeps Node's own
class Immediate {
  constructor(id) { this._id = id; }
  ref() { return this; }
  unref() { return this; }
  hasRef() { return true; }
  [Symbol.toPrimitive]() { return this._id; }
}
export function installImmediate(on) {
  globalThis.setImmediate = on ? (fn, ...args) => new Immediate(addTimer(fn, 0, args, false)) : undefined;
  globalThis.clearImmediate = on ? (handle) => globalThis.clearTimeout(handle) : undefined;
}
installImmediate(false);


// -- console into the journal --------------------------------------------------------------------
for (const level of ["log", "info", "warn", "error", "debug"]) {
  console[level] = (...args) => S.report.ops.push(["console", S.cur, level, args.map(show).join(" ")]);
}

// -- outbound calls: every one goes through Python (another object, a stub binding) -------------
let nidSeq = 0;
export const pending = new Map(); // nid -> {resolve, reject, post}
export function outbound(binding, key, method, args, post) {
  const nid = ++nidSeq;
  S.report.calls.push([nid, S.cur, binding, key, method, args]);
  return new Promise((resolve, reject) => pending.set(nid, { resolve, reject, post }));
}

// a promise Python waits for (a blockConcurrencyWhile, a waitUntil)
export function waitFor(kind, promise) {
  const nid = ++nidSeq;
  S.report.waits.push([nid, S.cur, kind]);
  track("n" + nid, promise, S.cur);
  return nid;
}

export function track(key, promise, iid) {
  promise.then(
    (v) => {
      S.cur = iid;
      let value;
      try {
        value = clone(v);
      } catch (e) { // a result JSON cannot carry: the caller gets the TypeError instead
        S.report.done.push([key, false, errInfo(e)]);
        return;
      }
      S.report.done.push([key, true, value]);
    },
    (e) => {
      S.cur = iid;
      S.report.done.push([key, false, errInfo(e)]);
    },
  );
}


globalThis.fetch = (input) => {
  const url = input instanceof Request ? input.url : String(input);
  throw unsupported(`fetch(${JSON.stringify(url)})`, "outbound network calls are not simulated; " +
      `bind a stub instead (bindings={"API": handler}) and call env.API.fetch(...)`);
};
