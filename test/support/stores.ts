/**
 * State stores for tests: one that wraps an in-memory store to override some
 * calls ({@link WrappedStore}), one whose next `get` waits on a gate
 * ({@link GatedStore}), and a stored record holding an unannounced pause.
 */
import { InMemoryStateStore, SUSPENSION_KEY, type JsonObject, type StateStore } from "../../src/index.js";

import type { Gate } from "./agents.js";

/**
 * A {@link StateStore} that hands every call to `inner`, an
 * {@link InMemoryStateStore} (where a test can also read or seed the data
 * directly): a test store extends it and overrides the calls it changes.
 */
export class WrappedStore implements StateStore {
  readonly durable: boolean = false;
  readonly inner = new InMemoryStateStore();
  get(name: string): Promise<JsonObject | undefined> {
    return this.inner.get(name);
  }
  set(name: string, state: JsonObject): Promise<void> {
    return this.inner.set(name, state);
  }
  delete(name: string): Promise<void> {
    return this.inner.delete(name);
  }
  list(): Promise<string[]> {
    return this.inner.list();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** An {@link InMemoryStateStore} whose next `get` of `holdNext.name` waits for `holdNext.gate` (once). */
export class GatedStore extends InMemoryStateStore {
  holdNext: { name: string; gate: Gate } | undefined;
  override async get(name: string): Promise<JsonObject | undefined> {
    const hold = this.holdNext;
    if (hold !== undefined && hold.name === name) {
      this.holdNext = undefined;
      await hold.gate.promise;
    }
    return super.get(name);
  }
}

/**
 * A stored record holding a pause that is not yet announced (`announced:
 * false`, as a kill between the marker's write and the one recording its
 * announcement leaves it), with `extra` as the rest of the state.
 */
export function unannouncedRecord(reason: string, extra: JsonObject = {}): JsonObject {
  return {
    ...extra,
    [SUSPENSION_KEY]: { reason, since: new Date().toISOString(), approver: null, suspensionId: "0190f0f0-0000-7000-8000-000000000001", announced: false },
  };
}
