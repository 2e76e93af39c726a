// The host's shared state and its pipe to Python (see host.mjs for the protocol).
import fs from "node:fs";

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

export function send(obj) {
  const body = Buffer.from(JSON.stringify(obj), "utf8");
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32LE(body.length, 0);
  writeAll(Buffer.concat([head, body]));
}

export function recv() {
  const n = readExact(4).readUInt32LE(0);
  const msg = JSON.parse(readExact(n).toString("utf8"));
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
export function clone(v) {
  if (v === undefined) return null;
  return JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)) ?? "null");
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
