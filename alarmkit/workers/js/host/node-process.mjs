// The `process` a worker sees: workerd's under nodejs_compat (src/node/internal/process.ts), not the
// host's. `process.env` holds the worker's text vars and secrets where workerd fills it (the flag
// nodejs_compat_populate_process_env, on by default from the compatibility date 2025-04-01; never the
// machine's environment), the clock members run on the virtual clock, `nextTick` is a microtask (as
// workerd's), and what would end or change the host process (exit, kill, chdir...) is refused by name.
// Only the members in READ pass through to Node's process (versions, platform...); event listeners live on
// the facade's own emitter. Any other function member is refused by name (getBuiltinModule would hand out
// Node's real fs, child_process and net), any other value is undefined (report, execPath, config and
// memoryUsage would show the machine: its environment, its paths, its memory).
import { EventEmitter } from "node:events";
import nodeProcess from "node:process";
import { S } from "./state.mjs";
import { unsupported } from "./refused.mjs";
import { nodejsCompat } from "./bundle.mjs";

// what a library may read of Node's process: what it is, never what the machine holds
const READ = new Set(["version", "versions", "platform", "arch", "release", "features", "emitWarning", "exitCode",
  Symbol.toStringTag]);

export function populatesEnv(flags, compat) {
  if (!nodejsCompat(flags, compat) || flags.includes("nodejs_compat_do_not_populate_process_env")) return false;
  return flags.includes("nodejs_compat_populate_process_env") || (typeof compat === "string" && compat >= "2025-04-01");
}

export function installProcess(vars, populate) {
  const env = {};
  if (populate) for (const [k, v] of Object.entries(vars)) if (typeof v === "string") env[k] = v;
  const refuse = (name, why) => () => {
    throw unsupported(`process.${name}()`, why);
  };
  const ns = () => BigInt(Math.max(0, S.now - S.start)) * 1000000n;
  function hrtime(prev) {
    const t = ns();
    const sec = t / 1000000000n, nano = t % 1000000000n;
    if (!Array.isArray(prev)) return [Number(sec), Number(nano)];
    let ds = Number(sec) - prev[0], dn = Number(nano) - prev[1];
    if (dn < 0) [ds, dn] = [ds - 1, dn + 1e9];
    return [ds, dn];
  }
  hrtime.bigint = ns;
  const own = {
    env,
    argv: ["node"],
    execArgv: [],
    title: "workerd",
    pid: 1,
    ppid: 0,
    cwd: () => "/bundle",
    hrtime,
    uptime: () => Math.max(0, S.now - S.start) / 1000,
    nextTick: (fn, ...args) => queueMicrotask(() => fn(...args)),
  };
  const why = "a Worker does not own its process; throw an error (or ctx.abort()) instead";
  for (const name of ["exit", "abort", "kill", "reallyExit", "chdir", "dlopen", "setuid", "setgid", "seteuid",
    "setegid", "setgroups", "initgroups", "umask", "binding", "_linkedBinding"]) own[name] = refuse(name, why);
  const outside = "it reaches the machine alarmkit runs on, outside the simulation; import the module instead " +
    "(the host refuses the modules that reach out)";
  const events = new EventEmitter();
  for (const name of ["on", "once", "off", "addListener", "removeListener", "removeAllListeners", "prependListener",
    "prependOnceListener", "emit", "listeners", "listenerCount", "eventNames", "setMaxListeners", "getMaxListeners"]) {
    own[name] = (...args) => {
      const out = events[name](...args);
      return out === events ? facade : out;
    };
  }
  const facade = new Proxy(nodeProcess, {
    get(t, prop) {
      if (Object.prototype.hasOwnProperty.call(own, prop)) return own[prop];
      if (READ.has(prop)) return Reflect.get(t, prop);
      if (typeof prop === "string" && typeof t[prop] === "function") return refuse(prop, outside);
      return undefined;
    },
    set(_t, prop, value) {
      own[prop] = value; // the worker's own change stays in its facade
      return true;
    },
  });
  Object.defineProperty(globalThis, "process", { value: facade, configurable: true, writable: true });
}
