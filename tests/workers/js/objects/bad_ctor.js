// A constructor that throws until storage says otherwise.
import { DurableObject } from "cloudflare:workers";

export class Fragile extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    if (ctx.id.name === "broken") throw new RangeError("constructor refused to start");
  }

  hello() {
    return "hi";
  }

  async arm(ms) {
    await this.ctx.storage.setAlarm(Date.now() + ms);
  }

  async alarm() {}
}
