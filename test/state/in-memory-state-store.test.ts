import { describe, expect, it } from "vitest";
import { InMemoryStateStore } from "../../src/state/in-memory-state-store.js";
import { StoreClosedError } from "../../src/state/store-closed-error.js";
import { describeStateStoreContract } from "./store-contract.js";
import { AgentProcess, ProcessStatus, Supervisor, type Message } from "civitas-ts";
import { runtimes, whenStarted, until } from "../support/runtimes.js";

describeStateStoreContract("InMemoryStateStore", async () => {
  const store = new InMemoryStateStore();
  return { store, cleanup: () => store.close() };
});

describe("InMemoryStateStore", () => {
  it("says it is not durable", () => {
    expect(new InMemoryStateStore().durable).toBe(false);
  });

  it("keeps separate instances separate", async () => {
    const a = new InMemoryStateStore();
    const b = new InMemoryStateStore();
    await a.set("x", { from: "a" });
    expect(await b.get("x")).toBeUndefined();
  });

  it("never hands out the object it was given", async () => {
    const store = new InMemoryStateStore();
    const state = { n: 1 };
    await store.set("x", state);
    expect(await store.get("x")).not.toBe(state);
  });
});

describe("StoreClosedError", () => {
  it("has a stable name, code and store field", () => {
    const err = new StoreClosedError("InMemoryStateStore");
    expect(err.name).toBe("StoreClosedError");
    expect(err.code).toBe("STORE_CLOSED");
    expect(err.store).toBe("InMemoryStateStore");
    expect(err.message).toContain("InMemoryStateStore is closed");
  });
});

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- state through the runtime
describe("InMemoryStateStore through the runtime", () => {
  it("a restart restores the checkpoint, not later in-memory mutations (nested ones included)", async () => {
    const store = new InMemoryStateStore();
    class Holder extends AgentProcess<{ nested: { items: number[] }; n: number }> {
      override state = { nested: { items: [1] }, n: 0 };
      override async handle(message: Message): Promise<void> {
        if (message.type === "save") {
          this.state.n = 1;
          await this.checkpoint();
          this.state.nested.items.push(99); // after the checkpoint: must not reach the store
          this.state.n = 2;
          return;
        }
        throw new Error("crash");
      }
    }
    const holder = new Holder("holder");
    const rt = await whenStarted(runtime(new Supervisor("sup", { children: [holder], backoffBaseMs: 0 }), { store }));
    await rt.send("holder", {}, { type: "save" });
    await until(() => holder.state.n === 2, "the save", 3_000, 2);
    await rt.send("holder", {}, { type: "boom" });
    await until(() => holder.incarnation === 2 && holder.status === ProcessStatus.RUNNING, "the restart", 3_000, 2);
    expect(holder.state).toEqual({ nested: { items: [1] }, n: 1 });
    expect(await store.get("holder")).toEqual({ nested: { items: [1] }, n: 1 });
  });
});
