// RpcTargets and functions passed by reference between two objects (a tally keeper and its client).
import { DurableObject, RpcTarget } from "cloudflare:workers";

class Tally extends RpcTarget {
  #n;
  constructor(start) {
    super();
    this.#n = start;
  }
  get count() {
    return this.#n;
  }
  bump(by = 1) {
    this.#n += by;
    return { n: this.#n, at: Date.now() };
  }
}

class Loose {
  x = 1;
}

export class Keeper extends DurableObject {
  tally(start) {
    return { tally: new Tally(start) };
  }
  async ask(callback) {
    const answer = await callback(7);
    return { answer, at: Date.now() };
  }
  loose() {
    return new Loose();
  }
}

export class Client extends DurableObject {
  #stub = null;
  async bumpTwice() {
    const { tally } = await this.env.KEEPER.getByName("k").tally(10);
    this.#stub = tally;
    const a = await tally.bump(2);
    await new Promise((r) => setTimeout(r, 500));
    const b = await tally.bump();
    return [a, b, await tally.count];
  }
  async again() {
    try {
      return await this.#stub.bump();
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  }
  async disposed() {
    const { tally } = await this.env.KEEPER.getByName("k").tally(0);
    const copy = tally.dup();
    tally[Symbol.dispose]();
    const first = await tally.bump().catch((e) => `${e.name}: ${e.message}`);
    return [first, (await copy.bump()).n];
  }
  async callMeBack() {
    const seen = [];
    const out = await this.env.KEEPER.getByName("k").ask((x) => {
      seen.push([x, Date.now()]);
      return x * 6;
    });
    return { out, seen };
  }
  async loose() {
    try {
      return await this.env.KEEPER.getByName("k").loose();
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  }
}
