// `node:perf_hooks`: the virtual `performance` (ms since the simulation's start)
export const performance = globalThis.performance;
export default { performance };
