// `node:timers` on the virtual clock: the globals sandbox.mjs installs (workerd's node:timers is
// its own setTimeout too: src/node/timers.ts)
export const setTimeout = (...a) => globalThis.setTimeout(...a);
export const clearTimeout = (...a) => globalThis.clearTimeout(...a);
export const setInterval = (...a) => globalThis.setInterval(...a);
export const clearInterval = (...a) => globalThis.clearInterval(...a);
export const setImmediate = (...a) => globalThis.setImmediate(...a); // installed under nodejs_compat (sandbox.mjs)
export const clearImmediate = (...a) => globalThis.clearImmediate(...a);
export const promises = {
  setTimeout: (ms, value) => new Promise((resolve) => globalThis.setTimeout(() => resolve(value), ms)),
  setImmediate: (value) => new Promise((resolve) => globalThis.setTimeout(() => resolve(value), 0)),
};
export default { setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate, promises };
