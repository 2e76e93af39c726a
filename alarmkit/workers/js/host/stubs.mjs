// Stubs of RpcTargets and functions passed by reference over RPC (workerd: src/workerd/api/worker-rpc.c++,
// JsRpcStub). A value that crossed holds {"$stub": [owner iid, ref, kind]} (state.mjs stubMark); the receiver
// gets a stub: a method call on it (or a call of it, for a function) is a call back into the owner's
// instance through Python (its input gate, its output gate), `await stub.name` reads a property, and
// `stub[Symbol.dispose]()` releases it ("RPC stub used after being disposed." after, JsRpcStub::getClient).
import { STUB, clone, refs } from "./state.mjs";
import { outbound } from "./sandbox.mjs";

const DISPOSE = Symbol.dispose || Symbol.for("nodejs.dispose");

function makeStub(mark) {
  let disposed = false;
  const used = () => {
    if (disposed) return Promise.reject(new Error("RPC stub used after being disposed."));
    return null;
  };
  const callOf = (name) => (...args) => used() || outbound("$stub", mark, name, clone(args));
  const fn = mark[2] === "function" ? callOf("") : function () {};
  return new Proxy(fn, {
    get(_t, prop) {
      if (prop === STUB) return disposed ? undefined : mark;
      if (prop === DISPOSE) return () => { disposed = true; };
      if (prop === "dup") return () => makeStub(mark);
      if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
      const call = callOf(prop);
      call.then = (ok, fail) => (used() || outbound("$stub", mark, `get ${prop}`, [])).then(ok, fail);
      return call;
    },
    apply(_t, _this, args) {
      if (mark[2] !== "function") throw new TypeError("the stub of an RpcTarget is not a function");
      return callOf("")(...args);
    },
  });
}

// a value from Python (a call's arguments, an answer) with its stubs made
export function revive(v) {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(revive);
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === "$stub" && Array.isArray(v.$stub)) return makeStub(v.$stub);
  for (const k of keys) v[k] = revive(v[k]);
  return v;
}

// a call on a stub, run in the owner's turn: workerd's tryGetProperty (worker-rpc.c++) for an RpcTarget
// (only its class's members, never its own properties or Object.prototype's; dup and constructor reserved)
export function callRef(ref, method, args) {
  const rec = refs.get(ref);
  if (!rec) throw new Error("Network connection lost.");
  const target = rec.target;
  if (method === "") return target(...args);
  const get = method.startsWith("get ");
  const name = get ? method.slice(4) : method;
  if (name === "dup" || name === "constructor") throw new TypeError(`'${name}' is a reserved method and cannot be called over RPC.`);
  const own = typeof target === "function"
    ? !Object.prototype.hasOwnProperty.call(target, name)
    : Object.prototype.hasOwnProperty.call(target, name) || target[name] === Object.prototype[name];
  if (own) throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
  const value = target[name];
  if (get) return value;
  if (typeof value !== "function") throw new TypeError(`"${name}" is not a function.`);
  return value.apply(target, args);
}

// the owner instance is gone: its references go with it
export function dropRefs(iid) {
  for (const [ref, rec] of refs) if (rec.iid === iid) refs.delete(ref);
}

