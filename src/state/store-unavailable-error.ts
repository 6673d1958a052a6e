import { CivitasError } from "../errors/civitas-error.js";

/**
 * A state store could not do what was asked: its database cannot be opened,
 * holds a table of another shape, or failed a read or a write. The call
 * changed nothing; the underlying error is the `cause`.
 *
 * `code` is `STORE_BUSY` when another connection held the database's write
 * lock for longer than the store waits (a retry later can succeed),
 * `STORE_SCHEMA_MISSING` (a `StoreSchemaMissingError`) when a schema,
 * table or privilege it needs is missing, and `STORE_UNAVAILABLE` otherwise.
 *
 * @example
 * ```ts
 * try { await store.set("payer", state); }
 * catch (err) { if (err instanceof StoreUnavailableError && err.code === "STORE_BUSY") retryLater(); }
 * ```
 */
export class StoreUnavailableError extends CivitasError {
  /** Which store failed, e.g. `SqliteStateStore('/var/lib/app/state.db')`. */
  readonly store: string;
  constructor(code: "STORE_UNAVAILABLE" | "STORE_BUSY" | "STORE_SCHEMA_MISSING", store: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.store = store;
  }
}
