// WebSockets inside the simulation: the `WebSocket` and `WebSocketPair` globals (Node 20 has no
// WebSocket, and workerd's WebSocketPair is its own), `Response`'s `webSocket` (status 101), and the
// hibernation surface on ctx (acceptWebSocket, getWebSockets, getTags, the auto-response...), after
// workerd's src/workerd/api/web-socket.h and actor-state.h.
//
// A socket is one end of a WebSocketPair made by the worker itself; nothing leaves the process:
// `new WebSocket(url)` (a connection out of the simulation) is refused by name, as fetch is. A message
// or a close sent on one end reaches the other in a later microtask of the same turn: as an event
// ("message", "close") on an end that called accept(), or as the object's webSocketMessage /
// webSocketClose on an end its ctx.acceptWebSocket took (the hibernation API). A hibernatable end
// outlives the instance that accepted it (workerd keeps it across hibernation): the next instance of
// the same object receives its events.
import { S, show } from "./state.mjs";
import { unsupported } from "./refused.mjs";

const NodeResponse = globalThis.Response;
const INTERNAL = Symbol("alarmkit.websocket");
const CONNECTING = 0, OPEN = 1, CLOSING = 2, CLOSED = 3;
let lookup = () => null; // iid -> the live object (host.mjs sets it)
const sockets = new Map(); // iid -> [{ws, tags}] accepted by ctx.acceptWebSocket
const auto = new Map(); // iid -> {pair, timeout}

export function setObjectLookup(fn) {
  lookup = fn;
}

function deliver(ws, kind, args) {
  const owner = ws._owner;
  queueMicrotask(() => {
    const iid = owner === null ? null : owner.iid;
    if (iid !== null) {
      const obj = lookup(owner.iid);
      const handler = obj && obj[kind === "message" ? "webSocketMessage" : kind === "close" ? "webSocketClose" : "webSocketError"];
      if (typeof handler !== "function") return;
      S.cur = owner.iid;
      Promise.resolve()
        .then(() => handler.call(obj, ws, ...args))
        .catch((e) => S.report.ops.push(["console", owner.iid, "error", `Uncaught ${show(e)} (in ${kind === "message" ? "webSocketMessage" : "webSocketClose"})`]));
      return;
    }
    if (!ws._accepted) {
      ws._queue.push([kind, args]);
      return;
    }
    ws._event(kind, args);
  });
}

export class WebSocket extends EventTarget {
  constructor(url, protocols, token) {
    if (token !== INTERNAL) {
      throw unsupported(`new WebSocket(${JSON.stringify(String(url))})`,
        "a connection out of the simulation is not simulated (nor is fetch); make a WebSocketPair to talk to an object inside it");
    }
    super();
    this._state = OPEN;
    this._peer = null;
    this._accepted = false;
    this._owner = null; // {iid} once ctx.acceptWebSocket took this end
    this._queue = [];
    this._attachment = undefined;
    this.url = null;
    this.protocol = "";
    this.extensions = "";
    this.binaryType = "arraybuffer";
    this.bufferedAmount = 0; // a message reaches its peer within the turn: nothing waits in a buffer
    for (const k of ["onopen", "onmessage", "onclose", "onerror"]) this[k] = null;
  }
  get readyState() {
    return this._state;
  }
  accept() {
    if (this._owner !== null) throw new TypeError("Can't accept() WebSocket that was already used in a response or accepted by the hibernation API.");
    this._accepted = true;
    for (const [kind, args] of this._queue.splice(0)) this._event(kind, args);
  }
  send(data) {
    if (!this._accepted && this._owner === null) {
      throw new TypeError("You must call one of accept() or state.acceptWebSocket() on this WebSocket before sending messages.");
    }
    if (this._state !== OPEN) throw new TypeError("Can't call WebSocket send() after close().");
    if (this._peer && this._peer._state === OPEN) deliver(this._peer, "message", [data]);
  }
  close(code = 1000, reason = "") {
    if (this._state >= CLOSING) return;
    this._state = CLOSED;
    const peer = this._peer;
    if (peer && peer._state < CLOSING) {
      peer._state = CLOSED;
      deliver(peer, "close", [code, String(reason), true]);
    }
  }
  serializeAttachment(value) {
    this._attachment = value === undefined ? undefined : structuredClone(value);
  }
  deserializeAttachment() {
    return this._attachment === undefined ? null : structuredClone(this._attachment);
  }
  _event(kind, args) {
    const ev = new Event(kind);
    if (kind === "message") ev.data = args[0];
    if (kind === "close") Object.assign(ev, { code: args[0], reason: args[1], wasClean: args[2] });
    const own = this[`on${kind}`];
    if (typeof own === "function") own.call(this, ev);
    this.dispatchEvent(ev);
  }
}
for (const [k, v] of Object.entries({ CONNECTING, OPEN, CLOSING, CLOSED })) {
  for (const target of [WebSocket, WebSocket.prototype]) {
    Object.defineProperty(target, k, { value: v, enumerable: true });
    Object.defineProperty(target, `READY_STATE_${k}`, { value: v, enumerable: true });
  }
}

export class WebSocketPair {
  constructor() {
    const a = new WebSocket(null, undefined, INTERNAL);
    const b = new WebSocket(null, undefined, INTERNAL);
    a._peer = b;
    b._peer = a;
    this[0] = a;
    this[1] = b;
  }
}

export class WebSocketRequestResponsePair {
  constructor(request, response) {
    this.request = String(request);
    this.response = String(response);
  }
}

// workerd's Response takes `webSocket` with status 101 (Node's refuses any status under 200)
export class Response extends NodeResponse {
  constructor(body, init) {
    const ws = init && typeof init === "object" ? init.webSocket ?? null : null;
    if (init && init.status === 101) {
      if (!(ws instanceof WebSocket)) throw new RangeError("Responses with status 101 must have a webSocket (workerd's rule)");
      super(null, { ...init, status: 200, webSocket: undefined });
      Object.defineProperty(this, "status", { value: 101 });
      Object.defineProperty(this, "ok", { value: false });
    } else {
      super(body, init);
    }
    Object.defineProperty(this, "webSocket", { value: ws });
  }
  static [Symbol.hasInstance](x) {
    return x instanceof NodeResponse;
  }
}

// A socket in a 101 response crosses Python (a stub's fetch, a worker's answer) as a number
const crossing = new Map(); // number -> the WebSocket end
let crossSeq = 0;
export function socketToken(ws) {
  if (!(ws instanceof WebSocket)) return null;
  crossing.set(++crossSeq, ws);
  return crossSeq;
}
export function socketOf(token) {
  const ws = crossing.get(token) || null;
  crossing.delete(token);
  return ws;
}

// -- the hibernation API on ctx (installed on DurableObjectState's prototype) ----------------------
function socketsOf(iid) {
  let list = sockets.get(iid);
  if (!list) sockets.set(iid, (list = []));
  return list;
}

const hibernation = {
  // not a method, but on the same prototype: workerd's ctx.props (a worker's props; none here)
  get props() {
    return {};
  },
  acceptWebSocket(ws, tags = []) {
    if (!(ws instanceof WebSocket)) throw new TypeError("acceptWebSocket() needs the server end of a WebSocketPair");
    if (ws._accepted || ws._owner !== null) throw new TypeError("Can't acceptWebSocket() a WebSocket that was already accepted.");
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string")) throw new TypeError("WebSocket tags must be an array of strings.");
    if (tags.length > 10) throw new TypeError("a WebSocket may have at most 10 tags");
    ws._owner = { iid: this._iid };
    socketsOf(this._iid).push({ ws, tags: [...tags] });
    for (const [kind, args] of ws._queue.splice(0)) deliver(ws, kind, args);
  },
  getWebSockets(tag) {
    const live = socketsOf(this._iid).filter((e) => e.ws._state !== CLOSED);
    sockets.set(this._iid, live);
    return (tag === undefined ? live : live.filter((e) => e.tags.includes(String(tag)))).map((e) => e.ws);
  },
  getTags(ws) {
    const e = socketsOf(this._iid).find((x) => x.ws === ws);
    if (!e) throw new Error("you must call 'acceptWebSocket()' before attempting to access the tags of a WebSocket.");
    return [...e.tags];
  },
  setWebSocketAutoResponse(pair) {
    if (pair === undefined || pair === null) auto.delete(this._iid);
    else if (!(pair instanceof WebSocketRequestResponsePair)) throw new TypeError("setWebSocketAutoResponse() takes a WebSocketRequestResponsePair");
    else auto.set(this._iid, { ...(auto.get(this._iid) || {}), pair });
  },
  getWebSocketAutoResponse() {
    const a = auto.get(this._iid);
    return a && a.pair ? a.pair : null;
  },
  getWebSocketAutoResponseTimestamp(_ws) {
    return null; // no auto-response was ever sent: nothing outside the simulation sends the request
  },
  setHibernatableWebSocketEventTimeout(ms) {
    auto.set(this._iid, { ...(auto.get(this._iid) || {}), timeout: ms === undefined ? null : Number(ms) });
  },
  getHibernatableWebSocketEventTimeout() {
    const a = auto.get(this._iid);
    return a && a.timeout !== undefined ? a.timeout : null;
  },
};

export function installHibernation(StateClass) {
  for (const [k, d] of Object.entries(Object.getOwnPropertyDescriptors(hibernation))) {
    Object.defineProperty(StateClass.prototype, k, { ...d, configurable: true });
  }
}

// an instance replaced (evicted, crashed, restarted): its hibernatable sockets go to the next one
export function handOver(from, to) {
  const list = sockets.get(from);
  if (!list) return;
  sockets.delete(from);
  for (const e of list) e.ws._owner = { iid: to };
  socketsOf(to).push(...list);
  const a = auto.get(from);
  if (a) {
    auto.delete(from);
    auto.set(to, a);
  }
}

globalThis.WebSocket = WebSocket;
globalThis.WebSocketPair = WebSocketPair;
globalThis.WebSocketRequestResponsePair = WebSocketRequestResponsePair;
globalThis.Response = Response;
