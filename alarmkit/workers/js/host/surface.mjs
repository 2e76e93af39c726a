// The runtime surface a module may touch that this host does not simulate: each member of workerd's
// DurableObjectState, DurableObjectStorage, SqlStorage and global scope (@cloudflare/workers-types) the
// host lacks is refused here by name, never left to a raw "x is not a function" / "x is not defined".
// Only members still absent are refused: whatever the host implements wins. A refused method or class
// throws WorkerUnsupported when called (a refused object, when any member is touched); its value carries
// REFUSED (the reason) so tests/workers/js/test_js_surface_check.py can list the refused set.
import { unsupported } from "./refused.mjs";

export const REFUSED = Symbol.for("alarmkit.refused");

const SOCKETS = "WebSockets are not simulated: drive the object through RPC or fetch";
const NETWORK = "the network is outside the simulation: bind a stub (bindings={\"API\": handler})";
const NOT_HERE = "it is not simulated under alarmkit";

export const CTX = {
  acceptWebSocket: SOCKETS, getWebSockets: SOCKETS, getTags: SOCKETS, setWebSocketAutoResponse: SOCKETS,
  getWebSocketAutoResponse: SOCKETS, getWebSocketAutoResponseTimestamp: SOCKETS,
  setHibernatableWebSocketEventTimeout: SOCKETS, getHibernatableWebSocketEventTimeout: SOCKETS,
};
export const STORAGE = {}; // the bookmarks are refused by globals.mjs (installRefused)
export const SQL = { Statement: "prepared statements (sql.prepare) are not simulated: use sql.exec(query, ...bindings)" };
export const GLOBALS = {
  WebSocket: SOCKETS, WebSocketPair: SOCKETS, WebSocketRequestResponsePair: SOCKETS,
  caches: "the Cache API is not simulated", CacheStorage: "the Cache API is not simulated",
  Cache: "the Cache API is not simulated", HTMLRewriter: NOT_HERE, EventSource: NETWORK,
  scheduler: NOT_HERE, Cloudflare: NOT_HERE, origin: NOT_HERE,
  FixedLengthStream: NOT_HERE, IdentityTransformStream: NOT_HERE, TailEvent: NOT_HERE, TraceEvent: NOT_HERE,
  ScheduledEvent: NOT_HERE, FetchEvent: NOT_HERE, ExtendableEvent: NOT_HERE, PromiseRejectionEvent: NOT_HERE,
  ErrorEvent: NOT_HERE, URLPattern: NOT_HERE, WorkerGlobalScope: NOT_HERE, Navigator: NOT_HERE,
  PerformanceMark: NOT_HERE, PerformanceMeasure: NOT_HERE, PerformanceResourceTiming: NOT_HERE,
  PerformanceObserver: NOT_HERE, PerformanceObserverEntryList: NOT_HERE, PerformanceEntry: NOT_HERE,
  Performance: NOT_HERE, Body: NOT_HERE, Crypto: NOT_HERE, SubtleCrypto: NOT_HERE, CryptoKey: NOT_HERE,
  reportError: NOT_HERE, CloseEvent: SOCKETS,
  addEventListener: "service-worker syntax is not supported: export a module (export default { fetch })",
  removeEventListener: "service-worker syntax is not supported: export a module (export default { fetch })",
  dispatchEvent: "service-worker syntax is not supported: export a module (export default { fetch })",
};

// a global workerd has and Node 20 lacks, cheap to give as workerd gives it (globals.mjs gives navigator)
if (!("self" in globalThis)) globalThis.self = globalThis;

// a function (callable and constructible) that throws, or an object whose every member throws
function refusal(what, why, asObject) {
  if (asObject) {
    return new Proxy({ [REFUSED]: why }, {
      get(t, prop) {
        if (prop === REFUSED) return why;
        if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
        throw unsupported(`${what}.${prop}`, why);
      },
    });
  }
  const fn = function () {
    throw unsupported(what, why);
  };
  Object.defineProperty(fn, "name", { value: what.split(".").pop() });
  fn[REFUSED] = why;
  return fn;
}

const OBJECTS = new Set(["caches", "scheduler", "Cloudflare"]); // values, not functions

// Refuse on `target` every member of `table` it does not have (`where`: how the module names it).
export function refuseMissing(target, table, where) {
  for (const [name, why] of Object.entries(table)) {
    if (name in target) continue;
    const what = where ? `${where}.${name}` : name;
    Object.defineProperty(target, name, {
      value: name === "origin" ? undefined : refusal(what, why, OBJECTS.has(name)),
      writable: true, configurable: true, enumerable: false,
    });
    if (name === "origin") {
      Object.defineProperty(target, name, { get() { throw unsupported(what, why); }, configurable: true, enumerable: false });
    }
  }
}
