// What a Worker meets where the simulation stops: a Node built-in that would reach outside it (the
// file system, sockets, processes; bundle.mjs), a network connection, a member of the runtime that
// alarmkit does not model. Each throws `WorkerUnsupported` naming what was used and why, never a raw
// TypeError that looks like the user's own bug. Imported by the bundle (a data: URL) and the host.

// Every refusal is noticed as it is made: the host's hook (host.mjs: an op ["refused", object, text] in the
// turn's report, journaled by Python as a `refused` event) sees it even when the code catches it. Set once.
let hook = null;
export function onRefused(fn) {
  if (hook === null) hook = fn;
}

export class WorkerUnsupported extends Error {
  constructor(message) {
    super(message);
    this.name = "WorkerUnsupported";
    if (hook !== null) {
      try {
        hook(String(message));
      } catch {
        // the refusal itself is thrown whatever the hook did
      }
    }
  }
}
Object.freeze(WorkerUnsupported);
Object.freeze(WorkerUnsupported.prototype);

export function unsupported(what, why) {
  return new WorkerUnsupported(`${what} is refused under alarmkit's JavaScript host: ${why}`);
}

const PASS = new Set(["then", "toJSON", "constructor", "prototype", "__esModule", "$$typeof", "asymmetricMatch"]);

// A stand-in for `node:NAME`: any member is another stand-in; calling or constructing one throws.
export function refusedModule(name, reaches) {
  const why = `node:${name} reaches ${reaches}, outside the simulation; ` +
    "stub the call, or bind a Python object in bindings= and call it through env";
  const make = (path) => new Proxy(function () {}, {
    get(_t, prop) {
      if (typeof prop !== "string") return prop === Symbol.toPrimitive ? () => `[refused ${path}]` : undefined;
      if (PASS.has(prop)) return undefined;
      return make(`${path}.${prop}`);
    },
    apply() {
      throw unsupported(`${path}()`, why);
    },
    construct() {
      throw unsupported(`new ${path}()`, why);
    },
    set() {
      return true; // a library patching a member it never calls (util.inherits targets): harmless
    },
  });
  return make(`node:${name}`);
}

// An object whose named members throw `WorkerUnsupported` when called (a runtime surface not modelled)
export function refusedMembers(owner, names, why) {
  const out = {};
  for (const n of names) {
    out[n] = () => {
      throw unsupported(`${owner}.${n}()`, why);
    };
  }
  return out;
}
