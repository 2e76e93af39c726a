// ctx.facets and ctx.exports (workerd's DurableObjectFacets, src/workerd/api/actor-state.h): a facet is
// a child object hosted in its parent, with its own storage. The rules (when a facet starts, its
// storage, its alarm that cannot be set, the break that follows, abort and delete) are the Python
// runtime's facet model (alarmkit/runtime/_facets.py): every get, abort and delete here asks Python,
// and every call into a facet is an outbound call that Python makes through its own facet stub. This
// file only gives them workerd's JavaScript shape.
import { show, syncOp } from "./state.mjs";
import { outbound } from "./sandbox.mjs";
import { DurableObjectId, requestDict, requestOf, responseFrom } from "./objects.mjs";

const FACET = "#facet"; // the outbound "binding" of a call into a facet (a name no env binding can have)
let mod = null;
let bindings = {};
let methodsOf = null;
export const facetIds = new Map(); // facet label -> the id its startup options named (its ctx.id)

// what ctx.exports.Name is for an exported class: workerd's DurableObjectClass, good as a facet's class
export class DurableObjectClass {
  constructor(name) {
    this._name = name;
  }
}

export let exportsObject = Object.freeze({});

export function setModule(m, b, methods, namespaces = {}) {
  mod = m;
  bindings = b;
  methodsOf = methods;
  const out = {};
  for (const [k, v] of Object.entries(m)) if (typeof v === "function" && k !== "default") out[k] = namespaces[k] || new DurableObjectClass(k);
  exportsObject = Object.freeze(out);
}

function className(opts, name) {
  const cls = opts && typeof opts === "object" ? opts.class : undefined;
  if (cls instanceof DurableObjectClass) return cls._name;
  if (cls && typeof cls === "object" && typeof cls._binding === "string" && bindings[cls._binding]) return bindings[cls._binding];
  throw new TypeError(
    `ctx.facets.get(${JSON.stringify(name)}, callback): the callback returned ${show(opts)}; return ` +
      `{ class: ctx.exports.ClassName } (or a Durable Object namespace of env as the class)`,
  );
}

function idOf(opts) {
  const id = opts.id;
  if (id === undefined || id === null) return undefined;
  if (typeof id === "string") return id;
  if (id instanceof DurableObjectId) return id;
  throw new TypeError(`ctx.facets.get(): the startup options' id is a string or a DurableObjectId, got ${show(id)}`);
}

function register(iid, name, opts) {
  const cls = className(opts, name);
  const id = idOf(opts);
  const r = syncOp(["facetGet", iid, name, cls, methodsOf(mod[cls])]);
  if (id !== undefined) facetIds.set(r.label, id);
  else facetIds.delete(r.label);
  return r.sid;
}

function stubOf(sid) {
  // sid: the Python stub's number, or (an async startup callback) a promise of it
  const call = (method, args, post) =>
    typeof sid === "number" ? outbound(FACET, sid, method, args, post) : sid.then((s) => outbound(FACET, s, method, args, post));
  return new Proxy({}, {
    get(_t, prop) {
      if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
      if (prop === "fetch") return facetFetch(call);
      return (...args) => call(prop, JSON.parse(JSON.stringify(args) ?? "[]"));
    },
  });
}

function facetFetch(call) {
  return async (input, init) => call("fetch", [await requestDict(requestOf(input, init))], responseFrom);
}

export class DurableObjectFacets {
  constructor(iid) {
    this._iid = iid;
  }
  // a stub to facet `name`; getStartupOptions() ({class, id?}, or a promise of it) is called only if
  // the facet is not running
  get(name, getStartupOptions) {
    if (typeof name !== "string" || name === "") throw new TypeError(`facet names are non-empty strings, got ${JSON.stringify(name) ?? String(name)}`);
    if (typeof getStartupOptions !== "function") throw new TypeError("The facet startup callback must be a function.");
    const running = syncOp(["facetGet", this._iid, name, null, null]);
    if (running !== null) return stubOf(running.sid);
    const opts = getStartupOptions();
    if (opts && typeof opts.then === "function") {
      const sid = Promise.resolve(opts).then((o) => register(this._iid, name, o));
      sid.catch(() => {}); // a failed start rejects each call on the stub, not the parent's turn
      return stubOf(sid);
    }
    return stubOf(register(this._iid, name, opts));
  }
  // ends the facet's running instance (its storage stays); its calls in flight fail with reason
  abort(name, reason) {
    syncOp(["facetAbort", this._iid, String(name), reason === undefined ? "aborted" : show(reason)]);
  }
  // aborts the facet and deletes its storage
  delete(name) {
    syncOp(["facetDelete", this._iid, String(name)]);
  }
}
