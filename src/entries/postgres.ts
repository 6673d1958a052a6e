/**
 * `civitas-ts/postgres`: a shared, fenced state store, leases, and one
 * signed audit chain for many processes, on PostgreSQL through `pg` 8 (an
 * optional peer dependency: `npm install pg@8`). The core never imports `pg`;
 * it is loaded when a store, lease table or sink is made.
 *
 * @example
 * ```ts
 * import { PostgresStateStore } from "civitas-ts/postgres";
 * const store = new PostgresStateStore({ connectionString: "postgres://app@db:5432/app" });
 * ```
 * @packageDocumentation
 */
export { PostgresStateStore } from "../postgres/postgres-state-store.js";
export type { PostgresStateStoreOptions, StoredApprovalState, StoredSuspension } from "../postgres/postgres-state-store.js";
export type { PostgresConnection, PostgresPoolOptions } from "../postgres/pg-connection.js";
export { PostgresLeases } from "../postgres/postgres-leases.js";
export type { PostgresLeasesOptions } from "../postgres/postgres-leases.js";
export { PostgresAuditSink } from "../postgres/postgres-audit-sink.js";
export type { PostgresAuditSinkOptions } from "../postgres/postgres-audit-sink.js";
