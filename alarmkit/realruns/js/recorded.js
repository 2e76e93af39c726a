// alarmkit recorder: wrap a Durable Object class so that every alarm call it makes is journaled.
//
//   import { recorded, effect } from "./recorded.js";
//   export class Ledger extends recorded(MyLedger) {}
//
// Each event is one console.log of a JSON string {"alarmkit":1, "ev":..., "obj":..., "t":Date.now(), ...}
// (the log-line convention of docs/real-runs.md): a tail worker, Logpush or `alarmkit record` reads them.
// Journaled: the constructor, setAlarm (arm), deleteAlarm (disarm), getAlarm (get), every method call
// (call), alarm() start with alarmInfo {scheduledTime, retryCount, isRetry}, its end or throw, and
// effect(ctx, name, key) when the object calls it. Nothing is changed: every call goes to the real API.

function objectName(ctx) {
  const id = ctx && ctx.id;
  if (!id) return "unknown";
  return id.name !== undefined && id.name !== null ? String(id.name) : id.toString();
}

export function emit(ctx, ev, fields = {}) {
  const line = { alarmkit: 1, ev, obj: objectName(ctx), t: Date.now(), ...fields };
  if (ctx && ctx.id) line.id = ctx.id.toString();
  console.log(JSON.stringify(line));
}

// An external effect the object performs (a revoke, an email): named so duplicates can be counted.
export function effect(ctx, name, key) {
  emit(ctx, "effect", { name, key });
}

// The storage object is patched in place (its alarm methods shadowed by own properties): the base
// DurableObject class accepts only the real state object, and the user's constructor may arm the
// alarm before it returns.
function patchStorage(ctx) {
  const storage = ctx.storage;
  if (!storage || storage.__alarmkitPatched) return;
  const setAlarm = storage.setAlarm, deleteAlarm = storage.deleteAlarm, getAlarm = storage.getAlarm;
  storage.setAlarm = async function (t, opts) {
    emit(ctx, "arm", { at: typeof t === "number" ? t : t instanceof Date ? t.getTime() : String(t) });
    return await setAlarm.call(storage, t, opts);
  };
  storage.deleteAlarm = async function (opts) {
    emit(ctx, "disarm");
    return await deleteAlarm.call(storage, opts);
  };
  storage.getAlarm = async function (opts) {
    const value = await getAlarm.call(storage, opts);
    emit(ctx, "get", { value });
    return value;
  };
  storage.__alarmkitPatched = true;
}

const SKIP = new Set(["constructor", "alarm", "fetch", "webSocketMessage", "webSocketClose", "webSocketError"]);

export function recorded(Base) {
  class Recorded extends Base {
    constructor(ctx, env) {
      emit(ctx, "construct");
      patchStorage(ctx);
      super(ctx, env);
      this.__alarmkitCtx = ctx;
    }
    async alarm(alarmInfo) {
      const ctx = this.__alarmkitCtx;
      const info = alarmInfo || {};
      emit(ctx, "alarm_start", {
        scheduledTime: info.scheduledTime instanceof Date ? info.scheduledTime.getTime() : info.scheduledTime,
        retryCount: info.retryCount, isRetry: info.isRetry,
      });
      this.__alarmkitDepth = (this.__alarmkitDepth || 0) + 1;
      try {
        const r = await super.alarm(alarmInfo);
        emit(ctx, "alarm_end");
        return r;
      } catch (e) {
        emit(ctx, "alarm_throw", { error: e && e.name, message: e && e.message });
        throw e;
      } finally {
        this.__alarmkitDepth -= 1;
      }
    }
  }
  // every method the user's class (and its user-written bases) defines: a "call" line, then the method
  for (let proto = Base.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor && proto.constructor.name === "DurableObject") break;
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (SKIP.has(name) || name.startsWith("_") || Object.prototype.hasOwnProperty.call(Recorded.prototype, name)) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (!d || typeof d.value !== "function") continue;
      const fn = d.value;
      Object.defineProperty(Recorded.prototype, name, {
        configurable: true, writable: true,
        value: function (...args) {
          // only calls from outside are journaled, not the object's calls to its own methods
          if (!this.__alarmkitDepth) emit(this.__alarmkitCtx, "call", { method: name });
          this.__alarmkitDepth = (this.__alarmkitDepth || 0) + 1;
          let r;
          try {
            r = fn.apply(this, args);
          } catch (e) {
            this.__alarmkitDepth -= 1;
            throw e;
          }
          if (r && typeof r.then === "function") {
            return r.finally(() => { this.__alarmkitDepth -= 1; });
          }
          this.__alarmkitDepth -= 1;
          return r;
        },
      });
    }
  }
  Object.defineProperty(Recorded, "name", { value: Base.name });
  Recorded.__alarmkitRecorded = true;
  return Recorded;
}
