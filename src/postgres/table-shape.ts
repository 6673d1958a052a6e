import type pg from "pg";
import { StoreUnavailableError } from "../state/store-unavailable-error.js";
import { withClient, type TableName } from "./pg-connection.js";
import { runSetup } from "./schema-setup.js";

/** A column as `information_schema` describes it: its type and whether NULL is allowed. @internal */
export interface ColumnShape {
  readonly type: string;
  readonly nullable: boolean;
}

/** What is wrong with an existing table's columns, or `undefined` when there is no such table. @internal */
export async function shapeProblems(client: pg.ClientBase, table: TableName, columns: Record<string, ColumnShape>): Promise<string[] | undefined> {
  const exists = await client.query<{ oid: string | null }>("SELECT to_regclass($1)::text AS oid", [table.sql]);
  if ((exists.rows[0]?.oid ?? null) === null) return undefined;
  const found = await client.query<{ column_name: string; data_type: string; is_nullable: string }>(
    `SELECT column_name, data_type, is_nullable FROM information_schema.columns
     WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2`,
    [table.schema ?? null, table.name],
  );
  const problems: string[] = [];
  for (const [name, want] of Object.entries(columns)) {
    const column = found.rows.find((c) => c.column_name === name);
    if (column === undefined) problems.push(`no column '${name}'`);
    else if (column.data_type !== want.type) problems.push(`column '${name}' is ${column.data_type}, not ${want.type}`);
    else if (!want.nullable && column.is_nullable === "YES") problems.push(`column '${name}' allows NULL`);
  }
  for (const column of found.rows) if (!(column.column_name in columns)) problems.push(`an extra column '${column.column_name}'`);
  return problems;
}

/**
 * Creates a table (and what goes with it: `ddl`, run in order, creating the
 * table and the objects `alongside`, and their schemas when missing) when it
 * is missing, under an advisory lock so processes starting together do not
 * race; checks an existing table's columns and refuses a foreign shape with
 * `STORE_UNAVAILABLE`, changing nothing. A table that exists is used as it
 * is, so a user without the CREATE privilege can use tables made for it;
 * one who lacks what creating needs gets `STORE_SCHEMA_MISSING`.
 * @internal
 */
export async function ensureTable(
  pool: pg.Pool,
  table: TableName,
  columns: Record<string, ColumnShape>,
  ddl: readonly string[],
  label: string,
  definition: string,
  alongside: readonly TableName[] = [],
): Promise<void> {
  await withClient(pool, async (client) => {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`civitas-ts schema ${table.text}`]);
      const problems = await shapeProblems(client, table, columns);
      if (problems !== undefined && problems.length > 0) {
        throw new StoreUnavailableError(
          "STORE_UNAVAILABLE",
          label,
          `${label}: the existing table ${table.text} has ${problems.join(", ")}; it needs ${definition}. Pass another table option; nothing was changed`,
        );
      }
      if (problems === undefined) await runSetup(client, [table, ...alongside], ddl, label);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}
