// `cloudflare:sockets` as alarmkit's JavaScript host provides it: `connect()` would open a TCP
// connection out of the simulation, so it is refused by name, as fetch is
import { unsupported } from "./refused.mjs";

export function connect(address) {
  const where = typeof address === "string" ? address : JSON.stringify(address);
  throw unsupported(`connect(${JSON.stringify(where)}) from cloudflare:sockets`,
    "a connection out of the simulation is not simulated; bind a Python object in bindings= and call it through env");
}
export default { connect };
