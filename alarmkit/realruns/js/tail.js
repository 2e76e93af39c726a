// alarmkit's tail worker for `alarmkit record`: forwards every TraceItem (tail) and every streaming
// tail event (tailStream) to the local collector as JSON. TraceItem fields are getters on a prototype,
// so they are copied out with for...in; Dates become epoch milliseconds.
function plain(v, depth = 0) {
  if (v === null || v === undefined || typeof v !== "object") return v;
  if (v instanceof Date) return v.getTime();
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
  if (depth > 8) return String(v);
  const out = {};
  for (const k in v) {
    try {
      const x = v[k];
      if (typeof x !== "function") out[k] = plain(x, depth + 1);
    } catch (e) {
      out[k] = null;
    }
  }
  return out;
}

export default {
  async tail(events, env) {
    await env.COLLECTOR.fetch("http://collector/tail", { method: "POST", body: JSON.stringify(plain(events)) });
  },
  tailStream(onset, env) {
    const post = (e) => env.COLLECTOR.fetch("http://collector/stream", { method: "POST", body: JSON.stringify([plain(e)]) });
    const first = post(onset);
    return async (e) => {
      await first;
      await post(e);
    };
  },
};
