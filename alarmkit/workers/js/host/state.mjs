// The host's shared state and its pipe to Python (see host.mjs for the protocol).
import fs from "node:fs";
import process from "node:process"; // the host's own: the global one is the worker's (node-process.mjs)

const IN = Number(process.argv[2]); // the pipe ends Python passed (their numbers in this process)
const OUT = Number(process.argv[3]);

// now: the virtual clock, set by every message from Python; start: the simulation's start_ms
// (performance.now() counts from it); cur: the instance whose turn is running (null: the stateless
// worker); report: what the running turn did, sent to Python when it ends
export const S = { now: 0, start: 0, cur: null, report: newReport() };

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
  if (msg.now !== undefined) S.now = msg.now;
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

export function jsError(info) {
  const E = { TypeError, RangeError, SyntaxError }[info.name] || Error;
  const err = new E(info.message);
  if (!(info.name in { TypeError: 1, RangeError: 1, SyntaxError: 1, Error: 1 })) err.name = info.name;
  return err;
}

export function errInfo(e) {
  if (e instanceof Error) return { name: e.name, message: String(e.message), stack: String(e.stack || "") };
  let text;
  try {
    text = typeof e === "string" ? e : JSON.stringify(e);
  } catch {
    text = String(e);
  }
  return { name: "Error", message: `Uncaught ${text}`, stack: "" };
}

// Values cross to Python as JSON (see docs/workers.md, JavaScript and TypeScript workers: what survives the trip).
// What JSON would change silently (NaN and infinity to null, a Date to a string, a typed array or a
// class instance to a bag of keys, a Set to {}) is refused: a TypeError naming the value and where.
export function clone(v) {
  if (v === undefined) return null;
  refuseLossy(v, "the value", 0);
  return JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)) ?? "null");
}

function refuseLossy(v, where, depth) {
  const t = typeof v;
  if (v === null || v === undefined || t === "string" || t === "boolean") return;
  if (t === "number") {
    if (!Number.isFinite(v)) throw lossy(`${v} in ${where}`);
    return;
  }
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
  if (proto !== Object.prototype && proto !== null) {
    const name = v instanceof Date ? "Date" : (v.constructor && v.constructor.name) || "non-plain object";
    throw lossy(`a ${name} in ${where}`);
  }
  for (const k of Object.keys(v)) refuseLossy(v[k], `${where}.${k}`, depth + 1);
}

function lossy(what) {
  return new TypeError(`values cross between JavaScript and Python as JSON, and this one cannot (${what}); pass ` +
    "strings, finite numbers, booleans, null, arrays, Maps and plain objects");
}

export function show(x) {
  if (typeof x === "string") return x;
  if (x instanceof Error) return `${x.name}: ${x.message}`;
  try {
    return JSON.stringify(x) ?? String(x);
  } catch {
    return String(x);
  }
}

export function attempt(fn) {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}
