// What an object sees: Request/Response across the pipe, ctx.storage (KV, SQL, the alarm), ctx,
// ids, namespaces, stubs and env.
import { S, attempt, clone, decodeValue, encodeValue, show, syncOp } from "./state.mjs";
import { RealDate, outbound, randomHex, waitFor } from "./sandbox.mjs";
import { DurableObjectFacets, exportsObject } from "./facets.mjs";
import { CTX, SQL, STORAGE, refuseMissing } from "./surface.mjs";
import { socketOf, socketToken } from "./websocket.mjs";
import { WorkerUnsupported } from "./refused.mjs";

// -- Request / Response across the pipe ----------------------------------------------------------
export function requestOf(input, init) {
  const req = input instanceof Request && init === undefined ? input : new Request(input, init);
  return req;
}
export async function requestDict(req) {
  const body = req.body === null ? null : await req.text();
  return { url: req.url, method: req.method, headers: [...req.headers], body };
}
export function requestFrom(d) {
  const init = { method: d.method, headers: d.headers };
  if (d.body !== null && d.body !== undefined && d.method !== "GET" && d.method !== "HEAD") init.body = d.body;
  return new Request(d.url, init);
}
export async function responseDict(res) {
  if (!(res instanceof Response)) throw new TypeError(`a fetch handler must return a Response, got ${show(res)}`);
  if (res.status === 101) return { status: 101, headers: [...res.headers], body: "", ws: socketToken(res.webSocket) };
  return { status: res.status, headers: [...res.headers], body: await res.text() };
}
export function responseFrom(d) {
  if (d.status === 101 && d.ws) return new Response(null, { status: 101, headers: d.headers, webSocket: socketOf(d.ws) });
  const nobody = d.status === 204 || d.status === 304 || d.status === 101;
  return new Response(nobody ? null : d.body, { status: d.status === 101 ? 200 : d.status, headers: d.headers });
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
  get Cursor() {
    return SqlCursor;
  }
}

// setAlarm's argument as workerd takes a kj::Date (jsg/value.h DateWrapper: a Date or a number, else
// util.c++'s "parameter 1 is not of type 'date'"; finite; int64 nanoseconds; truncated toward zero), then
// actor-state.c++'s "<= 0": the texts of runtime/_object.py alarm_time, observed on workerd 1.20261117.1
function alarmTime(t) {
  let ms;
  if (t instanceof RealDate) ms = t.getTime();
  else if (typeof t === "number") ms = t;
  else throw new TypeError("Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'.");
  if (!Number.isFinite(ms)) throw new TypeError("The value cannot be converted because it is not a valid Date.");
  if (ms * 1e6 >= 2 ** 63) throw new TypeError("This API doesn't support dates after 2189.");
  if (ms * 1e6 <= -(2 ** 63)) throw new TypeError("This API doesn't support dates before 1687.");
  ms = Math.trunc(ms);
  if (ms <= 0) throw new TypeError("setAlarm() cannot be called with an alarm time <= 0");
  return ms;
}

// ctx.storage.kv: the synchronous key-value API of a SQLite-backed object (workerd's SyncKvStorage)
class SyncKvStorage {
  constructor(iid) {
    this._iid = iid;
  }
  get(key) {
    checkKey(key);
    const v = syncOp(["get", this._iid, key]);
    return v === null ? undefined : decodeValue(v);
  }
  put(key, value) {
    checkKey(key);
    if (value === undefined) throw new TypeError("put() called with undefined value.");
    S.report.ops.push(["put", this._iid, key, encodeValue(value)]);
  }
  delete(key) {
    checkKey(key);
    return Boolean(syncOp(["delete", this._iid, key]));
  }
  list(options = {}) {
    return syncOp(["list", this._iid, options]).map(([k, v]) => [k, decodeValue(v)])[Symbol.iterator]();
  }
}

export class Storage {
  constructor(iid) {
    this._iid = iid;
    this.sql = new SqlStorage(iid);
    this.kv = new SyncKvStorage(iid);
    this._noAlarm = false; // set by the host when the class has no alarm()
  }
  async get(key) {
    if (Array.isArray(key)) {
      key.forEach(checkKey);
      return new Map(Object.entries(syncOp(["get", this._iid, key])).map(([k, v]) => [k, decodeValue(v)]));
    }
    checkKey(key);
    const v = syncOp(["get", this._iid, key]);
    return v === null ? undefined : decodeValue(v);
  }
  async put(key, value) {
    if (typeof key === "object" && key !== null) {
      const entries = Object.keys(key).map((k) => [k, encodeValue(key[k])]); // all cloned before any is written
      for (const [k, v] of entries) S.report.ops.push(["put", this._iid, k, v]);
      return;
    }
    checkKey(key);
    if (value === undefined) throw new TypeError("put() called with undefined value.");
    S.report.ops.push(["put", this._iid, key, encodeValue(value)]);
  }
  async delete(key) {
    if (Array.isArray(key)) key.forEach(checkKey);
    else checkKey(key);
    return syncOp(["delete", this._iid, key]);
  }
  async list(options = {}) {
    return new Map(syncOp(["list", this._iid, options]).map(([k, v]) => [k, decodeValue(v)]));
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
  // workerd's asyncTransactionImpl (actor-state.c++): the body runs inside blockConcurrencyWhile; a throw
  // rolls back (rows, keys and the alarm: runtime/_txn.py) and the caller gets the body's error, without
  // resetting the object; txn.rollback() returns, may be called again, and the call resolves with the
  // body's value; after it, txn's other calls throw "Cannot <op> on rolled back transaction"
  async transaction(fn) {
    const iid = this._iid;
    let open = true;
    const end = (what) => {
      if (!open) return;
      open = false;
      syncOp(["tx", iid, what]);
    };
    const guard = (op, f) => (...args) => {
      if (!open) throw new Error(`Cannot ${op} on rolled back transaction`);
      return f.apply(this, args);
    };
    const txn = { rollback: () => end("rollback") };
    for (const op of ["get", "put", "delete", "list", "getAlarm", "setAlarm", "deleteAlarm"]) txn[op] = guard(op, this[op]);
    const run = (async () => {
      syncOp(["tx", iid, "begin"]);
      try {
        const value = await fn(txn);
        end("commit");
        return { ok: true, value };
      } catch (error) {
        end("rollback");
        return { ok: false, error };
      }
    })();
    waitFor("bcw", run.then(() => null));
    const r = await run;
    if (!r.ok) throw r.error;
    return r.value;
  }
  sync() {
    // resolves in a later turn, once the writes so far are committed (workerd: after the flush)
    return outbound(null, null, "sync", []);
  }
  async getAlarm() {
    return syncOp(["getAlarm", this._iid]);
  }
  async setAlarm(t) {
    // a class without alarm() asks Python now, which throws as workerd's assertCanSetAlarm does
    // (actor-state.c++) where the profile says so; any other rides with the report (no round trip)
    if (this._noAlarm) syncOp(["setAlarm", this._iid, alarmTime(t)]);
    else S.report.ops.push(["setAlarm", this._iid, alarmTime(t)]);
    // workerd's promise settles two microtasks later: a .then() on it runs after the caller's second await
    // (the sql_txsync probe, workerd 1.20261117.1), in a transaction or not
    await null;
    await null;
  }
  async deleteAlarm() {
    S.report.ops.push(["deleteAlarm", this._iid]);
  }
}

export class DurableObjectId {
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

export class DurableObjectState {
  constructor(iid, id, facets) {
    this._iid = iid;
    this.id = id;
    this.storage = new Storage(iid);
    // ctx.facets where the simulation's profile has facets (workerd's do; celld's has none)
    if (facets) this.facets = new DurableObjectFacets(iid);
    this.exports = exportsObject;
    // as workerd 1.20261117.1 gives an object configured without a container (probed: ctx.container is
    // undefined, tests/workers/js/test_js_surface_check.py); ctx.props is websocket.mjs's ({})
    this.container = undefined;
    refuseMissing(this, CTX, "ctx");
    refuseMissing(this.storage, STORAGE, "ctx.storage");
    refuseMissing(this.storage.sql, SQL, "ctx.storage.sql");
  }
  blockConcurrencyWhile(fn) {
    // the callback runs later, not inside the caller (a constructor returns first), as workerd's
    // IoContext::blockConcurrencyWhile runs it in a task of its own (src/workerd/io/io-context.h)
    const p = Promise.resolve().then(() => fn());
    waitFor("bcw", p);
    return p;
  }
  waitUntil(promise) {
    waitFor("waitUntil", Promise.resolve(promise));
  }
  abort(reason, options) {
    const retry = !(options && options.retryAlarm === false); // workerd PR 6996: abort(reason, {retryAlarm})
    S.report.ops.push(["abort", this._iid, reason === undefined ? "aborted" : show(reason), retry]);
    throw new Error(`Durable Object aborted: ${reason === undefined ? "aborted" : show(reason)}`);
  }
}


export const uniqueIds = new Set(); // ids newUniqueId made: their objects have no name

export function hexOf(binding, name) {
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

function DurableObjectStub() {
  throw new TypeError("Illegal constructor");
}

function makeStub(binding, id) {
  const key = id.name !== undefined ? id.name : id.toString();
  return new Proxy({}, {
    get(_t, prop) {
      if (prop === "id") return id;
      if (prop === "name") return id.name;
      if (prop === "constructor") return DurableObjectStub; // the stub's own, never an RPC (as workerd's)
      if (typeof prop !== "string" || prop === "then") return undefined;
      if (prop === "fetch") {
        return async (input, init) => outbound(binding, key, "fetch", [await requestDict(requestOf(input, init))], responseFrom);
      }
      const call = (...args) => outbound(binding, key, prop, clone(args));
      // `await stub.prop` reads a getter of the object's prototype over RPC, as workerd's stubs do
      call.then = (ok, fail) => outbound(binding, key, `get ${prop}`, []).then(ok, fail);
      return call;
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
  jurisdiction(_name) {
    return this; // where objects live is not simulated: the same namespace (workerd's restricts their location)
  }
}

// env: Durable Object namespaces, fetch handlers and Python objects given as bindings (every call goes
// through Python), wrangler `vars` (plain values), and bindings refused by name when touched (a KV, R2...)
export function makeEnv(bindings, services, objects = [], vars = {}, refused = {}) {
  const base = {};
  for (const b of Object.keys(bindings)) base[b] = new Namespace(b);
  for (const s of services) {
    base[s] = {
      fetch: async (input, init) => outbound(s, null, "fetch", [await requestDict(requestOf(input, init))], responseFrom),
    };
  }
  for (const o of objects) {
    base[o] = new Proxy({}, {
      get(_t, prop) {
        if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
        if (prop === "fetch") {
          return async (input, init) => outbound(o, null, "fetch", [await requestDict(requestOf(input, init))], responseFrom);
        }
        return (...args) => outbound(o, null, prop, clone(args));
      },
    });
  }
  for (const [k, v] of Object.entries(vars)) base[k] = v;
  for (const [r, message] of Object.entries(refused)) {
    const refuse = (prop) => {
      return new WorkerUnsupported(prop === undefined ? message : message.replace(`env.${r}:`, `env.${r}.${prop}:`));
    };
    base[r] = new Proxy(function () {}, {
      get(_t, prop) {
        if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
        throw refuse(prop);
      },
      apply() {
        throw refuse();
      },
    });
  }
  // a name the config does not bind is undefined, as workerd's env gives it (no error: code that probes
  // for an optional binding, `if (env.AI)`, goes on as it would there)
  return base;
}

