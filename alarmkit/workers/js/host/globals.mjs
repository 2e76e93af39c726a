// workerd's globals that Node 20 lacks or has differently, as the simulation gives them: `caches`
// (the Cache API, always a miss: src/workerd/api/cache.h), `navigator`, `scheduler.wait`, and
// refused-by-name stand-ins for what reaches outside (`HTMLRewriter` is not modelled).
import { S } from "./state.mjs";
import { unsupported } from "./refused.mjs";

function note(what) {
  S.report.ops.push(["console", S.cur, "info", `alarmkit: ${what}: the Cache API is always a miss under alarmkit (nothing is cached)`]);
}

function keyOf(req) {
  return typeof req === "string" ? req : req && typeof req.url === "string" ? req.url : String(req);
}

class Cache {
  constructor(name) {
    this._name = name;
  }
  async match(req) {
    note(`caches.${this._name}.match(${JSON.stringify(keyOf(req))})`);
    return undefined;
  }
  async put(req, _res) {
    note(`caches.${this._name}.put(${JSON.stringify(keyOf(req))})`);
  }
  async delete(req) {
    note(`caches.${this._name}.delete(${JSON.stringify(keyOf(req))})`);
    return false;
  }
}

class CacheStorage {
  constructor() {
    this.default = new Cache("default");
  }
  async open(name) {
    return new Cache(`open(${JSON.stringify(String(name))})`);
  }
}

const define = (name, value) => Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
define("caches", new CacheStorage());
define("navigator", { userAgent: "Cloudflare-Workers", hardwareConcurrency: 1, language: "en-US", languages: ["en-US"] });
define("scheduler", { wait: (ms) => new Promise((resolve) => globalThis.setTimeout(resolve, ms)) });
const REWRITER = "workerd's HTML rewriter is not modelled; transform the text yourself";
define("HTMLRewriter", class HTMLRewriter {
  static [Symbol.for("alarmkit.refused")] = REWRITER; // what the surface check (test_js_surface_check.py) reads
  constructor() {
    throw unsupported("new HTMLRewriter()", REWRITER);
  }
});

// Iterator helpers (map, filter, take, ... on every iterator: V8 12, workerd has them; Node 20 not):
// pure computation, defined here where the Node lacks them (PartyServer's getConnections uses filter)
const IteratorProto = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
if (typeof IteratorProto.filter !== "function") {
  const helpers = {
    *map(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) yield fn(x, i++);
    },
    *filter(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) if (fn(x, i++)) yield x;
    },
    *take(n) {
      if (n <= 0) return;
      for (const x of { [Symbol.iterator]: () => this }) {
        yield x;
        if (--n <= 0) return;
      }
    },
    *drop(n) {
      for (const x of { [Symbol.iterator]: () => this }) if (n > 0) n--; else yield x;
    },
    *flatMap(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) yield* fn(x, i++);
    },
    reduce(fn, ...init) {
      let i = 0, acc = init[0], first = init.length === 0;
      for (const x of { [Symbol.iterator]: () => this }) {
        if (first) [acc, first] = [x, false];
        else acc = fn(acc, x, i);
        i++;
      }
      if (first) throw new TypeError("Reduce of empty iterator with no initial value");
      return acc;
    },
    toArray() {
      return [...{ [Symbol.iterator]: () => this }];
    },
    forEach(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) fn(x, i++);
    },
    some(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) if (fn(x, i++)) return true;
      return false;
    },
    every(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) if (!fn(x, i++)) return false;
      return true;
    },
    find(fn) {
      let i = 0;
      for (const x of { [Symbol.iterator]: () => this }) if (fn(x, i++)) return x;
      return undefined;
    },
  };
  for (const [k, fn] of Object.entries(helpers)) Object.defineProperty(IteratorProto, k, { value: fn, writable: true, configurable: true });
  if (typeof globalThis.Iterator === "undefined") {
    function Iterator() {}
    Iterator.prototype = IteratorProto;
    Iterator.from = (it) => (typeof it.next === "function" ? it : it[Symbol.iterator]());
    define("Iterator", Iterator);
  }
}

// members of workerd's DurableObjectStorage the simulation does not model: refused by name when called
// (point-in-time recovery: src/workerd/api/actor-state.h, getCurrentBookmark and friends)
export function installRefused(StorageClass) {
  const why = "point-in-time recovery (bookmarks) is not modelled by the simulation";
  for (const name of ["getCurrentBookmark", "getBookmarkForTime", "onNextSessionRestoreBookmark"]) {
    if (name in StorageClass.prototype) continue;
    const value = function () {
      return Promise.reject(unsupported(`ctx.storage.${name}()`, why));
    };
    value[Symbol.for("alarmkit.refused")] = why; // what the surface check (test_js_surface_check.py) reads
    Object.defineProperty(StorageClass.prototype, name, { value, writable: true, configurable: true });
  }
}
