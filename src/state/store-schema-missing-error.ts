import { StoreUnavailableError } from "./store-unavailable-error.js";

/**
 * A store's database lacks something the store needs and the store could
 * not (or may not) create it: a schema, a table, or the privilege to create
 * one. `missing` names it exactly (`schema "app"`, `table app.civitas_state`,
 * `the CREATE privilege on schema "app"`), and the message says the
 * statement or command that provides it. Nothing was changed.
 *
 * A subclass of {@link StoreUnavailableError}, so code that catches that
 * still catches this; `code` is `STORE_SCHEMA_MISSING`.
 *
 * @example
 * ```ts
 * try { await store.migrate(); }
 * catch (err) { if (err instanceof StoreSchemaMissingError) console.error(`ask your DBA for ${err.missing}: ${err.message}`); }
 * ```
 */
export class StoreSchemaMissingError extends StoreUnavailableError {
  /** What the database lacks, e.g. `schema "app"` or `table app.civitas_state`. */
  readonly missing: string;
  constructor(store: string, missing: string, message: string, options?: ErrorOptions) {
    super("STORE_SCHEMA_MISSING", store, message, options);
    this.missing = missing;
  }
}
