/**
 * `civitas-ts/sqlite`: the embedded durable state store, backed by
 * better-sqlite3 12 (an optional peer dependency: `npm install better-sqlite3`).
 *
 * @example
 * ```ts
 * import { SqliteStateStore } from "civitas-ts/sqlite";
 * const store = new SqliteStateStore("./state.db");
 * ```
 * @packageDocumentation
 */
export { SqliteStateStore } from "../sqlite/sqlite-state-store.js";
export type { SqliteStateStoreOptions } from "../sqlite/sqlite-state-store.js";
