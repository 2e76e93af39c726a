// `node:process` as a worker imports it: the worker's `process` (node-process.mjs), not the host's
const p = globalThis.process;
export default p;
export const { env, argv, execArgv, title, pid, ppid, platform, arch, version, versions, release, features } = p;
export const nextTick = (...a) => p.nextTick(...a);
export const hrtime = p.hrtime;
export const cwd = () => p.cwd();
export const uptime = () => p.uptime();
export const exit = (...a) => p.exit(...a);
export const emitWarning = (...a) => p.emitWarning(...a);
export const memoryUsage = (...a) => p.memoryUsage(...a);
export const on = (...a) => p.on(...a);
export const once = (...a) => p.once(...a);
export const off = (...a) => p.off(...a);
export const emit = (...a) => p.emit(...a);
