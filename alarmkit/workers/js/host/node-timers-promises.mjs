// `node:timers/promises` on the virtual clock
import timers from "./node-timers.mjs";
export const setTimeout = timers.promises.setTimeout;
export const setImmediate = timers.promises.setImmediate;
export default timers.promises;
