import { describe, expect, it } from "vitest";
import { InMemoryStateStore } from "../../src/state/in-memory-state-store.js";
import { StoreClosedError } from "../../src/state/store-closed-error.js";
import { describeStateStoreContract } from "./store-contract.js";

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
