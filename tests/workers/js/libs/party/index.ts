import { Server, routePartykitRequest, type Connection } from "partyserver";

export class Room extends Server {
  static options = { hibernate: true };

  async onRequest(request: Request): Promise<Response> {
    await this.ctx.storage.setAlarm(Date.now() + 5_000);
    return new Response(`armed ${this.name}`);
  }

  onConnect(connection: Connection) {
    connection.send(`welcome to ${this.name}`);
  }

  onMessage(connection: Connection, message: string) {
    this.broadcast(message, [connection.id]);
  }

  async onAlarm() {
    const n = ((await this.ctx.storage.get<number>("ticks")) ?? 0) + 1;
    await this.ctx.storage.put("ticks", n);
    this.broadcast(`tick ${n} at ${Date.now()}`);
    console.log(`${this.constructor.name} ${this.name}: tick ${n} at ${Date.now()} to ${[...this.getConnections()].length} connection(s)`);
    if (n < 3) await this.ctx.storage.setAlarm(Date.now() + 5_000);
  }
}

export class LiveRoom extends Room {
  static options = { hibernate: false };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routePartykitRequest(request, env)) || new Response("Not Found", { status: 404 });
  },
};
