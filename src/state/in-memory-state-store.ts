import type { JsonObject } from "../message/json.js";
import { assertStateName, decodeState, encodeState, STATE_RECORD_VERSION } from "./state-record.js";
import type { StateStore } from "./state-store.js";
import { StoreClosedError } from "./store-closed-error.js";

/** One stored record: the encoded JSON text and the schema version it was written with. */
interface StoredRecord {
  readonly version: number;
  readonly text: string;
}

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
 * It otherwise behaves like a real store: records are kept as encoded JSON
 * text with a schema version, so `set` and `get` copy deeply (mutating the
 * object you passed to `set`, or the one `get` returned, never changes what
 * is stored), non-JSON state is refused with `PAYLOAD_NOT_SERIALIZABLE`
 * before anything changes, and `list()` is sorted.
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

  private readonly records = new Map<string, StoredRecord>();
  private closed = false;

  /**
   * The state last set for `name`, as a fresh copy, or `undefined`.
   * @throws (rejects) `INVALID_ARGUMENT` for an empty or non-string name, `STORE_CLOSED` after `close()`.
   */
  async get(name: string): Promise<JsonObject | undefined> {
    this.assertOpen();
    assertStateName(name);
    const record = this.records.get(name);
    return record === undefined ? undefined : decodeState(name, record.version, record.text);
  }

  /**
   * Replaces the state of `name` with a deep copy of `state`.
   * @throws (rejects) `PAYLOAD_NOT_SERIALIZABLE` when `state` is not plain JSON (nothing is stored),
   * `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`.
   */
  async set(name: string, state: JsonObject): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    const text = encodeState(name, state);
    this.records.set(name, { version: STATE_RECORD_VERSION, text });
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


