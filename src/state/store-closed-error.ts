import { CivitasError } from "../errors/civitas-error.js";

/**
 * A call was made on a `StateStore` after its `close()`.
 *
 * Close a store only after the runtime that uses it has stopped: the runtime
 * never closes a store it was given, so whoever created the store closes it,
 * last.
 *
 * @example
 * ```ts
 * await store.close();
 * await store.get("payer"); // rejects: StoreClosedError, code "STORE_CLOSED"
 * ```
 */
export class StoreClosedError extends CivitasError {
  /** Which store was closed, e.g. `SqliteStateStore('/var/lib/app/state.db')`. */
  readonly store: string;
  constructor(store: string) {
    super(
      "STORE_CLOSED",
      `${store} is closed and takes no more calls; close a store only after the runtime using it has stopped, or open a new one`,
    );
    this.store = store;
  }
}
