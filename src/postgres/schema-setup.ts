import type pg from "pg";
import { StoreSchemaMissingError } from "../state/store-schema-missing-error.js";
import type { TableName } from "./pg-connection.js";

/**
 * Creating what a table needs before it can be created: its schema, and the
 * privilege to create objects there. A user who may not gets
 * `STORE_SCHEMA_MISSING` naming exactly what is missing and the statement
 * that provides it, instead of a raw SQLSTATE.
 * @module
 */

/** SQLSTATE `insufficient_privilege`. */
const INSUFFICIENT_PRIVILEGE = "42501";

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

function sqlstate(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/** The user and database of `client`'s connection, for messages. */
async function who(client: pg.ClientBase): Promise<{ user: string; db: string; schema: string | null }> {
  const found = await client.query<{ usr: string; db: string; schema: string | null }>("SELECT current_user AS usr, current_database() AS db, current_schema() AS schema");
  const row = found.rows[0];
  return { user: row?.usr ?? "?", db: row?.db ?? "?", schema: row?.schema ?? null };
}

/**
 * Runs `statements` (schema changes that create `objects`) on `client`,
 * inside the caller's transaction: the schema of each of `objects` is created first when
 * missing (`CREATE SCHEMA IF NOT EXISTS`). When the user may not create the
 * schema, or objects in it, rejects with {@link StoreSchemaMissingError}
 * saying what to grant or create, as a user who may; the caller rolls back,
 * so nothing is changed.
 * @internal
 */
export async function runSetup(client: pg.ClientBase, objects: readonly TableName[], statements: readonly string[], label: string): Promise<void> {
  await client.query("SAVEPOINT civitas_setup");
  let schema: string | undefined;
  try {
    for (const object of objects) {
      if (object.schema === undefined) continue;
      schema = object.schema;
      const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [object.schema]);
      if (found.rows.length === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(object.schema)}`);
    }
    schema = undefined;
    for (const statement of statements) await client.query(statement);
    await client.query("RELEASE SAVEPOINT civitas_setup");
  } catch (error) {
    if (sqlstate(error) !== INSUFFICIENT_PRIVILEGE) throw error;
    await client.query("ROLLBACK TO SAVEPOINT civitas_setup");
    const { user, db, schema: current } = await who(client);
    const why = error instanceof Error ? error.message : String(error);
    const names = objects.map((o) => o.text).join(", ");
    if (schema !== undefined) {
      throw new StoreSchemaMissingError(
        label,
        `schema "${schema}"`,
        `${label}: the schema "${schema}" (of ${names}) does not exist, and user "${user}" may not create it (${why}). As a user who may, run: CREATE SCHEMA ${quoteIdent(schema)} AUTHORIZATION ${quoteIdent(user)}; (or GRANT CREATE ON DATABASE ${quoteIdent(db)} TO ${quoteIdent(user)};), or name a table in an existing schema. Nothing was changed`,
        { cause: error },
      );
    }
    const target = objects[0]?.schema ?? current ?? undefined;
    const where = target === undefined ? "the current schema (no schema of search_path exists)" : `schema "${target}"`;
    const grant = `GRANT CREATE ON SCHEMA ${quoteIdent(target ?? "public")} TO`;
    throw new StoreSchemaMissingError(
      label,
      `the CREATE privilege on ${where}`,
      `${label}: ${names} does not exist yet, and user "${user}" may not create it in ${where} (${why}). As a user who may, run: ${grant} ${quoteIdent(user)}; or create the tables yourself (docs/postgres.md lists their definitions; 'civitas state migrate' creates a state store's). Nothing was changed`,
      { cause: error },
    );
  }
}
