import { assertJsonObject, copyIfJsonObject, copyJson, type JsonObject } from "../message/json.js";
import { assertStateName } from "./state-record.js";
import type { StateStore } from "./state-store.js";
import { StoreClosedError } from "./store-closed-error.js";

/**
 * What every successful {@link InMemoryStateStore.set} resolves: one settled
 * promise, shared (nothing waits on a write here). A caller that gets it
 * back knows the write is done and need not wait a microtask turn for it
 * (ProcessRunner.write, and the pause's writes).
 * @internal
 */
export const STORED: Promise<void> = Promise.resolve();

/**
 * A {@link StateStore} that keeps state in this process's memory.
 *
 * **NOT DURABLE.** Everything it holds is lost when the process exits or
 * crashes: a checkpoint, and a durable-suspension marker, written here do not
 * survive a restart of the process (they do survive a supervisor restarting
 * an agent inside the same process). `durable` is `false`. Use it for tests,
 * demos and agents whose state may be lost; use `SqliteStateStore` from
 * `civitas-ts/sqlite` for anything that must outlive the process.
 *
 * It otherwise behaves like a real store: `set` and `get` copy deeply, with
 * the result a JSON round trip would give (mutating the object you passed
 * to `set`, or the one `get` returned, never changes what is stored),
 * non-JSON state is refused with `PAYLOAD_NOT_SERIALIZABLE` before anything
 * changes, and `list()` is sorted.
 *
 * @example
 * ```ts
 * const store = new InMemoryStateStore(); // not durable: lost on exit
 * await store.set("counter", { n: 1 });
 * await store.get("counter"); // { n: 1 }
 * ```
 */
export class InMemoryStateStore implements StateStore {
  /**
   * Always `false`: nothing stored here survives the process.
   * @defaultValue `false`
   */
  readonly durable = false;

  /** Private deep copies, never handed out. */
  private readonly records = new Map<string, JsonObject>();
  private closed = false;

  /**
   * The state last set for `name`, as a fresh copy, or `undefined`.
   * @throws (rejects) `INVALID_ARGUMENT` for an empty or non-string name, `STORE_CLOSED` after `close()`.
   */
  async get(name: string): Promise<JsonObject | undefined> {
    this.assertOpen();
    assertStateName(name);
    const state = this.records.get(name);
    return state === undefined ? undefined : copyJson(state);
  }

  /**
   * Replaces the state of `name` with a deep copy of `state`.
   * @throws (rejects) `PAYLOAD_NOT_SERIALIZABLE` when `state` is not plain JSON (nothing is stored),
   * `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`.
   */
  set(name: string, state: JsonObject): Promise<void> {
    try {
      this.assertOpen();
      if (!this.records.has(name)) assertStateName(name); // a name already stored was checked when it was first set
      // Checked and copied in one walk; what that walk cannot judge is checked thoroughly (and refused with its path).
      let copy = copyIfJsonObject(state);
      if (copy === undefined) {
        assertJsonObject(state, `state of '${name}'`);
        copy = copyJson(state);
      }
      this.records.set(name, copy);
      return STORED;
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what the checks threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Removes the state of `name`; a no-op when there is none.
   * @throws (rejects) `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`.
   */
  async delete(name: string): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    this.records.delete(name);
  }

  /**
   * Names that have state, sorted by UTF-16 code unit (JavaScript's default sort).
   * @throws (rejects) `STORE_CLOSED` after `close()`.
   */
  async list(): Promise<string[]> {
    this.assertOpen();
    return [...this.records.keys()].sort();
  }

  /** Drops everything stored and refuses further calls with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.records.clear();
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError("InMemoryStateStore");
  }
}


