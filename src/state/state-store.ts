import type { JsonObject } from "../message/json.js";

/**
 * Where agents' checkpointed `state` lives. Every method reports errors by
 * rejecting. `set` is atomic: after a crash the store holds either the whole
 * new state or the whole previous one, never a mix.
 *
 * The runtime never closes a store it was given; whoever created it closes it.
 */
export interface StateStore {
  /** Whether a `set` that resolved survives a crash of this process (and of the machine, for an fsync'ed store). */
  readonly durable: boolean;
  /**
   * The fence this handle writes with, for a store that fences its writers
   * (`PostgresStateStore.fenced(fence)`); absent or 0 otherwise. A runtime
   * on a fenced store stamps it on its audit receipts (`details.fence`), so
   * a receipt written after a takeover is not taken as a decision.
   */
  readonly fence?: number;
  /**
   * Moves the records of `names` to this handle's {@link StateStore.fence},
   * so a former owner's writes to them are refused from then on; a store
   * that fences its writers implements it. A runtime on such a store calls
   * it for each agent at the agent's first start, right after an
   * `agent.claimed` receipt stamped with the fence is on record: a receipt
   * the former owner writes after the takeover then comes after that one
   * in the log, so no reader takes it as a decision (docs/postgres.md).
   * Rejects with `STATE_FENCED` when a newer fence owns one of them.
   */
  claim?(names: readonly string[]): Promise<void>;
  /**
   * The state last set for `name`, or `undefined`.
   * Rejects with `STATE_SCHEMA` when the stored record is of an unknown version or malformed.
   */
  get(name: string): Promise<JsonObject | undefined>;
  /**
   * Replaces the state of `name`, all of it or none of it. Rejects with
   * `PAYLOAD_NOT_SERIALIZABLE` (and stores nothing) when `state` is not plain JSON.
   */
  set(name: string, state: JsonObject): Promise<void>;
  /** Removes the state of `name`; a no-op when there is none. */
  delete(name: string): Promise<void>;
  /** Names that have state, sorted. */
  list(): Promise<string[]>;
  /** Releases the store's resources. Idempotent. */
  close(): Promise<void>;
}
