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

import { setImmediate as nodeSetImmediate } from "node:timers";
import process from "node:process"; // the host's own: the global one is the worker's (node-process.mjs)
import * as cfw from "./cloudflare-workers.mjs";
import { bundle, nodejsCompat } from "./bundle.mjs";
import { S, attempt, errInfo, jsError, newReport, recv, send, show, waits } from "./state.mjs";
import { installImmediate, pending, seedRandom, timers, track, waitFor } from "./sandbox.mjs";
import { DurableObjectId, DurableObjectState, Storage, hexOf, makeEnv, requestFrom, responseDict, uniqueIds } from "./objects.mjs";
import { exportsObject, facetIds, setModule } from "./facets.mjs";
import { handOver, installHibernation, setObjectLookup } from "./websocket.mjs";
import { installRefused } from "./globals.mjs";
import { installProcess, populatesEnv } from "./node-process.mjs";
import { GLOBALS, refuseMissing } from "./surface.mjs";
import { onRefused } from "./refused.mjs";
import { callRef, dropRefs, revive } from "./stubs.mjs";

refuseMissing(globalThis, GLOBALS, ""); // what workerd's global scope has and this host does not, refused by name
onRefused((text) => S.report.ops.push(["refused", S.cur, text])); // every refusal journaled, caught or not

const KEYS = ["ops", "done", "timers", "clear", "waits", "calls"];
let mod = null;
let env = null;
const instances = new Map(); // iid -> {obj, ctx}
installHibernation(DurableObjectState);
installRefused(Storage);
setObjectLookup((iid) => (instances.get(iid) || {}).obj || null);

// workerd's RPC names (src/workerd/api/worker-rpc.c++, isReservedName): the methods of the class's
// prototype chain, `_`-prefixed ones included; fetch and alarm are listed (Python forwards them itself)
const RESERVED = new Set(["constructor", "connect", "webSocketMessage", "webSocketClose", "webSocketError", "dup"]);
function methodsOf(cls) {
  const names = new Set();
  for (let p = cls.prototype; p && p !== Object.prototype && p !== cfw.DurableObject.prototype; p = Object.getPrototypeOf(p)) {
    for (const n of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, n);
      if (!RESERVED.has(n) && typeof d.value === "function") names.add(n);
      else if (!RESERVED.has(n) && typeof d.get === "function") names.add(`get ${n}`); // `await stub.n` reads it
    }
  }
  return [...names].sort();
}

async function load(msg) {
  S.start = msg.start;
  S.cpu = msg.cpu === true;
  seedRandom(msg.seed);
  let code;
  try {
    code = await bundle(msg.entry, msg.esbuild, msg.flags || [], msg.build || {}, msg.compat);
  } catch (e) {
    const errors = e.errors || [];
    const first = errors.length ? errors[0] : null;
    const where = first && first.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : "";
    let text = first ? `${where}${first.text}` : String(e.message || e);
    const pkg = first && /^Could not resolve "([^./][^"]*)"$/.exec(first.text);
    if (pkg) text += ` (a package the project's node_modules does not hold: install the project's dependencies, e.g. npm ci in its folder)`;
    return { t: "error", error: { name: "BuildError", message: text } };
  }
  // after the bundle: esbuild, in this process, spawns its service with the host's own process.env
  installProcess(msg.vars || {}, populatesEnv(msg.flags || [], msg.compat));
  installImmediate(nodejsCompat(msg.flags || [], msg.compat));
  try {
    mod = await import("data:text/javascript;base64," + Buffer.from(code, "utf8").toString("base64"));
  } catch (e) {
    return { t: "error", error: errInfo(e) };
  }
  env = makeEnv(msg.bindings, msg.services, msg.objects || [], msg.vars || {}, msg.refused || {});
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
  const namespaces = {}; // a class bound in the config: ctx.exports.Name is its namespace, as workerd's
  for (const [binding, name] of Object.entries(msg.bindings)) namespaces[name] = namespaces[name] || env[binding];
  setModule(mod, msg.bindings, methodsOf, namespaces);
  Object.assign(cfw.exports, exportsObject);
  const dflt = mod.default;
  const hasFetch = !!dflt && (typeof dflt.fetch === "function" || (typeof dflt === "function" && typeof dflt.prototype.fetch === "function"));
  return { t: "loaded", classes, fetch: hasFetch };
}

// -- events ---------------------------------------------------------------------------------------
function construct(msg) {
  const cls = mod[msg.cls];
  const unique = uniqueIds.has(msg.name);
  const hex = unique ? msg.name : hexOf(msg.binding, msg.name);
  let id = new DurableObjectId(hex, unique || msg.idname === null ? undefined : msg.idname);
  const given = msg.facet ? facetIds.get(msg.facet) : undefined; // a facet's id its startup options named
  if (given !== undefined) id = typeof given === "string" ? new DurableObjectId(hexOf(msg.binding, given), given) : given;
  const ctx = new DurableObjectState(msg.iid, id, msg.facets);
  ctx.storage._noAlarm = typeof cls.prototype.alarm !== "function";
  const rec = { obj: null, ctx };
  instances.set(msg.iid, rec);
  if (msg.drop !== null) {
    // the instance this one replaces is gone (crashed, evicted, restarted): so are its timers
    instances.delete(msg.drop);
    dropRefs(msg.drop);
    handOver(msg.drop, msg.iid);
    for (const [id, t] of timers) if (t.iid === msg.drop) timers.delete(id);
  }
  try {
    rec.obj = new cls(ctx, env);
    S.report.done.push(["p" + msg.pid, true, null]);
  } catch (e) {
    instances.delete(msg.iid);
    S.report.done.push(["p" + msg.pid, false, errInfo(e)]);
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
      S.cur = msg.iid;
      return construct(msg);
    case "call": {
      S.cur = msg.iid;
      const obj = instance(msg.iid);
      const p = attempt(() => {
        // workerd calls only the prototype's methods: an instance's own property of that name (a field, an
        // arrow function, one shadowing a prototype method) is not one (asked of workerd: surface_probe.js);
        // "get NAME" reads a getter of the prototype (`await stub.NAME`)
        const get = msg.method.startsWith("get ");
        const name = get ? msg.method.slice(4) : msg.method;
        if ((!get && typeof obj[name] !== "function") || Object.prototype.hasOwnProperty.call(obj, name)) {
          throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
        }
        return get ? obj[name] : obj[name](...revive(msg.args));
      });
      return track("p" + msg.pid, p, S.cur);
    }
    case "stubcall": { // a call on a stub of one of this instance's RpcTargets or functions (stubs.mjs)
      S.cur = msg.iid;
      return track("p" + msg.pid, attempt(() => callRef(msg.ref, msg.method, revive(msg.args))), S.cur);
    }
    case "alarm": {
      S.cur = msg.iid;
      const obj = instance(msg.iid);
      // workerd's AlarmInvocationInfo (src/workerd/api/actor-state.h): retryCount, isRetry, scheduledTime (ms)
      const info = { retryCount: msg.info[0], isRetry: msg.info[0] > 0, scheduledTime: msg.info[1] };
      return track("p" + msg.pid, attempt(() => {
        if (typeof obj.alarm !== "function") throw new Error("alarm() is not defined on this Durable Object class");
        return obj.alarm(info);
      }), S.cur);
    }
    case "fetch": {
      S.cur = msg.iid;
      const req = requestFrom(msg.req);
      const p = attempt(() => {
        if (msg.iid !== null) return instance(msg.iid).fetch(req);
        const d = mod.default;
        const ctx = { waitUntil: (pr) => waitFor("waitUntil", Promise.resolve(pr)), passThroughOnException() {} };
        if (typeof d === "function") return new d(ctx, env).fetch(req);
        return d.fetch(req, env, ctx);
      }).then(responseDict);
      if (msg.iid === null) {
        // the worker's own fetch threw: workerd logs it and answers the client 500 (the error stays in the
        // journal as the worker's console error), where an object's fetch rejects its caller's stub.fetch
        const top = p.catch((e) => {
          S.report.ops.push(["console", null, "error", `Uncaught ${show(e)} (in the worker's fetch handler)`]);
          return { status: 500, headers: [["content-type", "text/plain;charset=UTF-8"]], body: "Internal Server Error" };
        });
        return track("p" + msg.pid, top, S.cur);
      }
      return track("p" + msg.pid, p, S.cur);
    }
    case "timer": {
      const t = timers.get(msg.id);
      if (!t) return; // cleared meanwhile
      S.cur = t.iid;
      if (t.interval) S.report.timers.push([msg.id, t.iid, t.ms === 0 ? 1 : t.ms]);
      else timers.delete(msg.id);
      try {
        t.fn(...t.args);
      } catch (e) {
        S.report.ops.push(["console", S.cur, "error", `Uncaught ${show(e)} (in a timer callback)`]);
      }
      return;
    }
    case "settle": {
      const p = pending.get(msg.nid);
      if (!p) return;
      pending.delete(msg.nid);
      S.cur = msg.iid;
      if (msg.ok) p.resolve(p.post ? p.post(msg.value) : revive(msg.value));
      else p.reject(jsError(msg.value));
      return;
    }
    default:
      throw new Error(`internal: unknown message ${msg.t}`);
  }
}

let busyNs = 0n; // the host's own time per message: from the message read to its report sent
let began = 0n;
function finish() {
  const r = S.report;
  S.report = newReport();
  const out = { t: "turn" }; // only the lists the turn filled (most fill one or two), in KEYS' order
  for (const k of KEYS) if (r[k].length !== 0) out[k] = r[k];
  send(out);
  busyNs += process.hrtime.bigint() - began;
  loop();
}

function loop() {
  let msg = recv();
  while (msg.t === "stats") { // the benchmark's: answered at once, any number in a row
    send({ t: "stats", busy_ms: Number(busyNs / 1000n) / 1000, ...waits });
    msg = recv();
  }
  if (msg.t === "load") {
    load(msg).then((r) => {
      send(r);
      loop();
    });
    return;
  }
  if (msg.t === "exit") process.exit(0);
  began = process.hrtime.bigint();
  try {
    dispatch(msg);
  } catch (e) {
    S.report.ops.push(["console", S.cur, "error", `alarmkit host: ${show(e)}`]);
  }
  nodeSetImmediate(finish);
}

// workerd logs an unhandled rejection and carries on; Node would end the process: journal it instead
process.on("unhandledRejection", (e) => {
  S.report.ops.push(["console", S.cur, "error", `Uncaught (in promise) ${show(e)}`]);
});

send({ t: "ready", node: process.versions.node });
loop();
