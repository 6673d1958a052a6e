import type pg from "pg";
import { APPROVALS_KEY } from "../approvals/stored-approvals.js";
import { StoreUnavailableError } from "../state/store-unavailable-error.js";
import { sibling, withClient, type TableName } from "./pg-connection.js";
import { runSetup } from "./schema-setup.js";
import { shapeProblems, type ColumnShape } from "./table-shape.js";

/**
 * The records table of `PostgresStateStore`, and how it is created and
 * checked. Every statement that changes the schema is here.
 * @module
 */

/** The columns: PostgreSQL type (as `information_schema` spells it) and whether NULL is allowed. */
const COLUMNS: Record<string, ColumnShape> = {
  name: { type: "bytea", nullable: false },
  version: { type: "integer", nullable: false },
  state: { type: "text", nullable: true },
  suspended: { type: "text", nullable: true },
  fence: { type: "bigint", nullable: false },
  updated_at: { type: "timestamp with time zone", nullable: false },
};

/** The table's definition, as documented in docs/postgres.md. @internal */
export function createTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.sql} (
  name bytea PRIMARY KEY,
  version integer NOT NULL,
  state text,
  suspended text,
  fence bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`;
}

/** The partial index that makes the list of suspensions one indexed query. @internal */
export function indexName(table: TableName): string {
  return `${table.name.slice(0, 50)}_suspended_idx`;
}

function createIndexSql(table: TableName): string {
  return `CREATE INDEX IF NOT EXISTS "${indexName(table)}" ON ${table.sql} (name) WHERE suspended IS NOT NULL`;
}

/**
 * What marks a row that holds approval requests: its state text has the
 * runtime's approvals key with at least one record (`JSON.stringify` writes
 * it so; an empty list is never stored). The predicate of the partial index
 * below and of `listApprovalStates()`: the same expression, so the planner
 * can use the index. A user value that happens to contain the text only
 * makes a row read in vain (the reader checks the top-level key).
 * @internal
 */
export const HOLDS_APPROVALS_SQL = `strpos(state, '${JSON.stringify(APPROVALS_KEY)}:[{') > 0`;

/** The partial index that makes the cluster's approval requests one indexed query. @internal */
function approvalsIndexName(table: TableName): string {
  return `${table.name.slice(0, 50)}_approvals_idx`;
}

function createApprovalsIndexSql(table: TableName): string {
  return `CREATE INDEX IF NOT EXISTS "${approvalsIndexName(table)}" ON ${table.sql} (name) WHERE ${HOLDS_APPROVALS_SQL}`;
}

/** The sequence fences are drawn from. @internal */
export function createSequenceSql(sequence: string): string {
  return `CREATE SEQUENCE IF NOT EXISTS ${sequence} AS bigint START WITH 1`;
}

/** What is wrong with the existing table, or `[]`; `undefined` when there is no such table. */
async function problems(client: pg.ClientBase, table: TableName): Promise<string[] | undefined> {
  const found = await shapeProblems(client, table, COLUMNS);
  if (found === undefined) return undefined;
  const key = await client.query<{ attname: string }>(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = $1::regclass AND i.indisprimary`,
    [table.sql],
  );
  if (key.rows.length !== 1 || key.rows[0]?.attname !== "name") found.push("a primary key other than (name)");
  return found;
}

/**
 * Makes sure the table (with its index) and the fence sequence exist:
 * creates them (and their schemas) when missing (serialized by an advisory lock, so
 * processes starting together do not race), checks an existing table's shape
 * and refuses a foreign one without changing anything. With `migrate`, also
 * adds a missing index (the suspensions' or the approval requests') to a table of the right shape.
 * @throws {@link StoreUnavailableError} (`STORE_UNAVAILABLE`) for a table of another shape.
 * @internal
 */
export async function ensureSchema(pool: pg.Pool, table: TableName, sequence: TableName, label: string, migrate: boolean): Promise<void> {
  await withClient(pool, async (client) => {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`civitas-ts schema ${table.text}`]);
      const found = await problems(client, table);
      if (found !== undefined && found.length > 0) {
        throw new StoreUnavailableError(
          "STORE_UNAVAILABLE",
          label,
          `${label}: the existing table ${table.text} has ${found.join(", ")}; it needs (name bytea PRIMARY KEY, version integer NOT NULL, state text, suspended text, fence bigint NOT NULL, updated_at timestamptz NOT NULL). Pass another table option, or migrate the table yourself. Nothing was changed`,
        );
      }
      const creating: TableName[] = [];
      const ddl: string[] = [];
      const fences = await client.query<{ oid: string | null }>("SELECT to_regclass($1)::text AS oid", [sequence.sql]);
      if ((fences.rows[0]?.oid ?? null) === null) {
        creating.push(sequence);
        ddl.push(createSequenceSql(sequence.sql));
      }
      if (found === undefined || migrate) {
        creating.unshift(table);
        // The approvals index came later: a table made before it works without it (a listing reads every row) until migrated.
        ddl.push(createTableSql(table), createIndexSql(table), createApprovalsIndexSql(table));
      }
      // Only what is missing is created, so a user without the CREATE privilege can use tables made for it.
      if (ddl.length > 0) await runSetup(client, creating, ddl, label);
      if (found !== undefined && !migrate) {
        const index = await client.query<{ oid: string | null }>("SELECT to_regclass($1)::text AS oid", [sibling(table, indexName(table))]);
        if (index.rows[0]?.oid === null) {
          throw new StoreUnavailableError(
            "STORE_UNAVAILABLE",
            label,
            `${label}: the table ${table.text} has no index '${indexName(table)}' on its suspension markers; create it with 'civitas state migrate --store postgres://… --table ${table.text}' (or store.migrate()). Nothing was changed`,
          );
        }
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}
