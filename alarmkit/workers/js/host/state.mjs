// The host's shared state and its pipe to Python (see host.mjs for the protocol).
import fs from "node:fs";
import v8 from "node:v8";
import process from "node:process"; // the host's own: the global one is the worker's (node-process.mjs)
import { types as nodeTypes } from "node:util";

const RPC_TARGET = Symbol.for("alarmkit.rpcTarget");

const IN = Number(process.argv[2]); // the pipe ends Python passed (their numbers in this process)
const OUT = Number(process.argv[3]);

// now: the virtual clock, set by every message from Python; start: the simulation's start_ms
// (performance.now() counts from it); cur: the instance whose turn is running (null: the stateless
// worker); report: what the running turn did, sent to Python when it ends
export const S = { now: 0, start: 0, cur: null, report: newReport(), cpu: false, t0: 0n };

// Date.now() while code runs: the virtual clock, which code does not move (the default), or with
// Simulation(cpu_time="measured") the clock plus the real ms since the turn began, as on workerd
// (docs/runtime.md, "The clock while code runs")
export function clockNow() {
  return S.cpu ? S.now + Number((process.hrtime.bigint() - S.t0) / 1000000n) : S.now;
}

export function newReport() {
  return { t: "turn", ops: [], done: [], timers: [], clear: [], waits: [], calls: [] };
}

// -- the pipe -----------------------------------------------------------------------------------
// Python and this host take turns. Blocking in readSync costs a kernel wake-up when Python answers
// (tens of microseconds on a virtual machine), more than a trivial turn; so, when Python says two CPUs
// are there (argv[4]: microseconds to poll, 0 for none), a wait first polls a non-blocking twin of the
// pipe's read end (/proc/self/fd/N opens a file description of its own, so the blocking one stays
// blocking) and blocks only when nothing came. A poll that finds nothing makes the next waits block
// at once, doubling up to 64, as alarmkit/workers/js/_node.py does on its side.
const SPIN_NS = BigInt(Math.round(Number(process.argv[4] || 0) * 1000));
const POLL = SPIN_NS > 0n ? openTwin(IN) : -1;
let skip = 0;
let backoff = 0;
export const waits = { polled: 0, blocked: 0 }; // waits answered while polling, waits that blocked (the benchmark's)

function openTwin(fd) {
  try {
    return fs.openSync(`/proc/self/fd/${fd}`, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return -1; // no /proc: every wait blocks
  }
}

function poll(buf, off) {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0; // each empty read throws EAGAIN: no stack to capture
  try {
    const end = process.hrtime.bigint() + SPIN_NS;
    do {
      try {
        const r = fs.readSync(POLL, buf, off, buf.length - off, null);
        backoff = 0;
        waits.polled++;
        return r;
      } catch (e) {
        if (e.code !== "EAGAIN") throw e;
      }
    } while (process.hrtime.bigint() < end);
  } finally {
    Error.stackTraceLimit = limit;
  }
  backoff = skip = Math.min(2 * backoff + 1, 64);
  return -1;
}

function writeAll(buf, n) {
  let off = 0;
  while (off < n) {
    try {
      off += fs.writeSync(OUT, buf, off, n - off);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
    }
  }
}

let inBuf = Buffer.allocUnsafe(1 << 16); // bytes read from Python, inLen of them not yet taken
let inLen = 0;
function fill(need) {
  if (need > inBuf.length) {
    const bigger = Buffer.allocUnsafe(Math.max(need, 2 * inBuf.length));
    inBuf.copy(bigger, 0, 0, inLen);
    inBuf = bigger;
  }
  while (inLen < need) {
    let r = -1;
    if (POLL >= 0) {
      if (skip > 0) skip--;
      else r = poll(inBuf, inLen);
    }
    if (r < 0) {
      waits.blocked++;
      try {
        r = fs.readSync(IN, inBuf, inLen, inBuf.length - inLen, null);
      } catch (e) {
        if (e.code === "EAGAIN") continue;
        throw e;
      }
    }
    if (r === 0) process.exit(0); // Python closed the pipe: the simulation is gone
    inLen += r;
  }
}

let outBuf = Buffer.allocUnsafe(1 << 16);
export function send(obj) {
  const text = JSON.stringify(obj);
  if (4 + 3 * text.length > outBuf.length) outBuf = Buffer.allocUnsafe(4 + 3 * text.length); // UTF-8: 3 bytes a unit at most
  const n = outBuf.write(text, 4, "utf8");
  outBuf.writeUInt32LE(n, 0);
  writeAll(outBuf, 4 + n);
}

export function recv() {
  if (inLen < 4) fill(4);
  const end = 4 + inBuf.readUInt32LE(0);
  if (inLen < end) fill(end);
  const msg = JSON.parse(inBuf.toString("utf8", 4, end));
  inBuf.copy(inBuf, 0, end, inLen); // what came after this message (none while the two take turns)
  inLen -= end;
  if (msg.now !== undefined) {
    S.now = msg.now;
    S.t0 = process.hrtime.bigint(); // the turn's start: cpu_time="measured" moves Date.now() from it
  }
  return msg;
}

// A read answered by Python now, in the middle of the turn: the writes buffered so far go first.
export function syncOp(op) {
  const ops = S.report.ops;
  S.report.ops = [];
  send({ t: "sync", ops, op });
  const r = recv();
  if (!r.ok) throw jsError(r.error);
  return r.value;
}

// An error that crossed an RPC boundary, as workerd rebuilds it (probe rpc_errors on workerd 1.20261117.1):
// a built-in class keeps its class and message (a RangeError arrives as a RangeError); any other arrives as
// an Error keeping its name; own fields (a `code`) come along.
const ERROR_CLASSES = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
export function jsError(info) {
  const E = Object.hasOwn(ERROR_CLASSES, info.name) ? ERROR_CLASSES[info.name] : Error;
  const err = new E(info.message);
  if (E === Error && info.name !== "Error") err.name = info.name;
  if (info.props) for (const [k, v] of Object.entries(info.props)) if (!(k in { name: 1, message: 1, stack: 1 })) err[k] = v;
  return err;
}

function ownFields(e) {
  const out = {};
  let n = 0;
  for (const k of safely(() => Object.keys(e), [])) {
    if (k === "name" || k === "message" || k === "stack") continue;
    try {
      out[k] = clone(e[k]);
      n++;
    } catch {
      // a field JSON cannot carry stays behind
    }
  }
  return n ? out : undefined;
}

// What was thrown, as Python gets it. Never throws itself: a thrown value whose reading throws (a Proxy
// whose traps throw, a revoked Proxy) left the caller's promise unsettled, and Python journaled a
// 15-minute timeout instead of the failure; a Symbol read as "Uncaught undefined".
export function errInfo(e) {
  if (safely(() => e instanceof Error, false)) {
    return {
      name: safely(() => String(e.name), "Error"),
      message: safely(() => String(e.message), "(its message throws when read)"),
      stack: safely(() => String(e.stack || ""), ""),
      ...safely(() => { const props = ownFields(e); return props ? { props } : {}; }, {}),
    };
  }
  return { name: "Error", message: `Uncaught ${show(e)}`, stack: "" };
}

function safely(fn, fallback) {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

// A thrown or logged value as text, whatever it is: never throws.
export function show(x) {
  if (typeof x === "string") return x;
  if (typeof x === "symbol") return safely(() => x.toString(), "a Symbol");
  if (safely(() => x instanceof Error, false)) {
    return `${safely(() => String(x.name), "Error")}: ${safely(() => String(x.message), "(its message throws when read)")}`;
  }
  const text = safely(() => JSON.stringify(x), undefined);
  if (typeof text === "string") return text;
  const plain = safely(() => String(x), undefined);
  if (typeof plain === "string") return plain;
  return nodeTypes.isProxy(x) ? "a Proxy that throws when read" : `a ${typeof x} that throws when read`;
}

// Values cross to Python as JSON (see docs/workers.md, JavaScript and TypeScript workers: what survives the trip).
// What JSON would change silently (NaN and infinity to null, a Date to a string, a typed array or a
// class instance to a bag of keys, a Set to {}) is refused: a TypeError naming the value and where.
export function clone(v) {
  if (v === undefined) return null;
  refuseLossy(v, "the value", 0);
  return JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : byRef(x) ? stubMark(x) : x)) ?? "null");
}

// -- RpcTargets and functions cross by reference (workerd: src/workerd/api/worker-rpc.c++,
// RpcSerializerExternalHandler::serializeFunction and JsRpcTarget::serialize): the receiver gets a stub
// whose calls go back to the owner, the instance whose turn sent the value. Here the value crosses as
// {"$stub": [owner iid, ref, kind]}; the owner keeps the target in `refs` until it is dropped.
let refSeq = 0;
export const refs = new Map(); // ref -> {target, iid}
export const STUB = Symbol("alarmkit.stub"); // a stub's own mark: passed on, it crosses as the same reference
function byRef(x) {
  return typeof x === "function" || (x !== null && typeof x === "object" && safely(() => x[RPC_TARGET] === true, false));
}
function stubMark(x) {
  const own = safely(() => x[STUB], undefined);
  if (own) return { $stub: own };
  const ref = ++refSeq;
  refs.set(ref, { target: x, iid: S.cur });
  return { $stub: [S.cur, ref, typeof x === "function" ? "function" : "target"] };
}

function refuseLossy(v, where, depth) {
  const t = typeof v;
  if (v === null || v === undefined || t === "string" || t === "boolean") return;
  if (t === "number") {
    if (!Number.isFinite(v)) throw lossy(`${v} in ${where}`);
    return;
  }
  if (t === "function") return; // crosses as a stub (clone)
  if (t !== "object") throw lossy(`a ${t} in ${where}`);
  if (depth > 1000) throw lossy(`${where} nested more than 1,000 deep`);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) refuseLossy(v[i], `${where}[${i}]`, depth + 1);
    return;
  }
  if (v instanceof Map) {
    for (const [k, x] of v) refuseLossy(x, `${where}.get(${JSON.stringify(String(k))})`, depth + 1);
    return;
  }
  const proto = Object.getPrototypeOf(v);
  if (safely(() => v[RPC_TARGET] === true || Boolean(v[STUB]), false)) return; // crosses as a stub (clone)
  if (proto !== Object.prototype && proto !== null) {
    if (!BUILT_IN.some((C) => v instanceof C) && !ArrayBuffer.isView(v)) {
      // a class instance that is neither an RpcTarget nor data: workerd's RPC serializer refuses it
      // (treatClassInstancesAsPlainObjects = false, worker-rpc.c++; the text: jsg/ser.c++ throwDataCloneErrorForObject)
      const name = safely(() => v.constructor.name, "") || "Object";
      throw new DOMException(`Could not serialize object of type "${name}". This type does not support serialization.`, "DataCloneError");
    }
    const name = v instanceof Date ? "Date" : (v.constructor && v.constructor.name) || "non-plain object";
    throw lossy(`a ${name} in ${where}`);
  }
  for (const k of Object.keys(v)) refuseLossy(v[k], `${where}.${k}`, depth + 1);
}

const BUILT_IN = [Date, RegExp, Set, Map, Error, ArrayBuffer, Boolean, Number, String, Promise, WeakMap, WeakSet];

function lossy(what) {
  return new TypeError(`values cross between JavaScript and Python as JSON, and this one cannot (${what}); pass ` +
    "strings, finite numbers, booleans, null, arrays, Maps and plain objects");
}

// Stored values are structured clones, as workerd's storage keeps them (serializeV8Value in
// actor-state.c++; probe kv_values on workerd 1.20261117.1: a Date, Map, Set, typed array, ArrayBuffer,
// RegExp, BigInt, NaN, -0 and an undefined field come back as they went in). Node's v8.serialize is the
// same V8 ValueSerializer. A value JSON holds exactly is stored as JSON (Python reads it as it always
// did); any other as {"$v8": base64 of v8.serialize}, which get() turns back into the value.
export function encodeValue(v) {
  if (jsonExact(v, 0)) return v;
  try {
    return { $v8: v8.serialize(v).toString("base64") };
  } catch (e) {
    // workerd: a DOMException named DataCloneError, "<value> could not be cloned."
    throw new DOMException(String(e && e.message), "DataCloneError");
  }
}

export function decodeValue(v) {
  if (v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.$v8 === "string" && Object.keys(v).length === 1) {
    const out = v8.deserialize(Buffer.from(v.$v8, "base64"));
    virtualDates(out, new Set());
    return out;
  }
  return v;
}

// v8.deserialize builds Dates of Node's own Date; the module's Date is the virtual clock's subclass
// (sandbox.mjs), so `x instanceof Date` holds for a stored Date again
function virtualDates(x, seen) {
  if (x === null || typeof x !== "object" || seen.has(x)) return;
  seen.add(x);
  if (Object.prototype.toString.call(x) === "[object Date]") {
    if (Object.getPrototypeOf(x) !== globalThis.Date.prototype) Object.setPrototypeOf(x, globalThis.Date.prototype);
    return;
  }
  if (x instanceof Map) {
    for (const [k, y] of x) {
      virtualDates(k, seen);
      virtualDates(y, seen);
    }
  } else if (x instanceof Set) {
    for (const y of x) virtualDates(y, seen);
  } else if (!ArrayBuffer.isView(x) && !(x instanceof ArrayBuffer)) {
    for (const k of Object.keys(x)) virtualDates(x[k], seen);
  }
}

function jsonExact(v, depth) {
  const t = typeof v;
  if (v === null || t === "string" || t === "boolean") return true;
  if (t === "number") return Number.isFinite(v) && !Object.is(v, -0);
  if (t !== "object" || depth > 1000) return false;
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype || Object.keys(v).length !== v.length) return false; // holes, extra keys
    for (let i = 0; i < v.length; i++) if (!jsonExact(v[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === "$v8") return false; // would read back as an encoded value
  for (const k of keys) if (!jsonExact(v[k], depth + 1)) return false;
  return true;
}


export function attempt(fn) {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}
