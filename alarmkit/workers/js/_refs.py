"""Calls on stubs of RpcTargets and functions a JavaScript object passed by reference over RPC
(host/stubs.mjs): each is delivered to the owner instance as an RPC, as workerd delivers a call on a
JsRpcStub into the owner's IoContext (src/workerd/api/worker-rpc.c++)."""

from __future__ import annotations

from typing import Any

from ...errors import JsError, WorkerUnsupported

__all__ = ["owner_call", "stub_call"]


async def owner_call(obj: Any, ref: int, method: str, args: list) -> Any:
    """The owner's side (``JsObject._stub_call``): run the call in its instance (host.mjs ``stubcall``)."""
    value = await obj._bridge.event(obj, {"t": "stubcall", "iid": obj._iid, "ref": ref, "method": method, "args": args})
    return await obj.ctx._host.settled(value)


async def stub_call(bridge: Any, mark: list, method: str, args: list) -> Any:
    """Deliver a stub's call to its owner as an RPC (input gate, output gate). An owner evicted, crashed or
    restarted since fails it as workerd fails a call on a broken capability: a DISCONNECTED error,
    "Network connection lost." (src/workerd/jsg/util.c++)."""
    iid, ref = mark[0], mark[1]
    if iid is None:
        raise WorkerUnsupported("a stub of an RpcTarget or function sent by the stateless worker (not a Durable Object) "
                                "is refused under alarmkit's JavaScript host; return it from a Durable Object's method")
    owner = bridge.instances.get(iid)
    host = None if owner is None else owner.ctx._host

    def check() -> None:
        if host is None or host.instance is not owner:
            raise JsError("Error: Network connection lost.", "Error", "", "Network connection lost.", {})

    check()
    return await bridge.sim.rpc(host, "_stub_call", (ref, method, args), {}, check)
