import { createHash } from "node:crypto";
import type pg from "pg";
import type { ApprovalStatus } from "../approvals/approval-types.js";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, StateFencedError } from "../errors/errors.js";
import { stderrLogger, type Logger } from "../logging/logger.js";
import type { JsonObject } from "../message/json.js";
import { readMarker, SUSPENSION_KEY, type SuspensionMarker } from "../state/suspension-marker.js";
import { int8, openPool, tableName, unavailable, type PostgresConnection, type PostgresPoolOptions, type TableName } from "./pg-connection.js";
import { ensureSchema, HOLDS_APPROVALS_SQL } from "./postgres-state-schema.js";
import { assertStateName, decodeState, encodeState, STATE_RECORD_VERSION } from "../state/state-record.js";
import type { StateStore } from "../state/state-store.js";
import { StoreClosedError } from "../state/store-closed-error.js";

/** Options of {@link PostgresStateStore}. */
export interface PostgresStateStoreOptions extends PostgresPoolOptions {
  /**
   * The table that holds the records, created on first use if missing; a
   * plain identifier, optionally schema-qualified (`app.civitas_state`).
   * @defaultValue `"civitas_state"`
   */
  table?: string;
  /**
   * The sequence fences are drawn from, created on first use if missing, in
   * the given schema or the table's. Every store, lease table and process
   * of one cluster must use the same one, so fences compare across them.
   * @defaultValue `"civitas_fence"` in the table's schema
   */
  fenceSequence?: string;
  /**
   * Where connection errors the pool reports on its own (an idle connection
   * the server dropped) go. Only for a pool the store makes.
   * @defaultValue warnings to stderr
   */
  logger?: Logger;
}

/** A suspended agent as the marker column records it: see {@link PostgresStateStore.listSuspended}. */
export interface StoredSuspension {
  /** The agent. */
  readonly name: string;
  /** Its stored marker. */
  readonly marker: SuspensionMarker;
}

/** A stored state holding approval requests: see {@link PostgresStateStore.listApprovalStates}. */
export interface StoredApprovalState {
  /** The agent. */
  readonly name: string;
  /** Its whole stored state; the requests are under `APPROVALS_KEY`. */
  readonly state: JsonObject;
}

/** What a store and its fenced views share: one pool, one table, one schema check. */
interface Core {
  readonly pool: pg.Pool;
  readonly owned: boolean;
  readonly table: TableName;
  readonly sequence: TableName;
  readonly label: string;
  readonly where: string;
  ready: Promise<void> | undefined;
  closing: Promise<void> | undefined;
  readonly sql: Record<"get" | "set" | "del" | "tomb" | "fenceOf" | "list" | "suspended" | "approvals" | "claim" | "next", pg.QueryConfig>;
}

/** How this store's table is made, for a `STORE_SCHEMA_MISSING` error. */
function setupHint(core: Pick<Core, "table" | "sequence">): string {
  return `The store creates its table ${core.table.text} and sequence ${core.sequence.text} (and their schema) on its next call, or run 'civitas state migrate --store postgres://… --table ${core.table.text}' (store.migrate()), as a user allowed to create them; or check the table and fenceSequence options`;
}

const DEFAULT_TABLE = "civitas_state";
const DEFAULT_SEQUENCE = "civitas_fence";

/** A named (server-side prepared) statement; the name is derived from the text. */
function prepared(text: string): pg.QueryConfig {
  return { name: `civitas_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text };
}

function statements(t: string, seq: string): Core["sql"] {
  return {
    get: prepared(`SELECT version, state FROM ${t} WHERE name = $1`),
    set: prepared(
      `INSERT INTO ${t} AS r (name, version, state, suspended, fence, updated_at) VALUES ($1, $2, $3, $4, $5, clock_timestamp())
       ON CONFLICT (name) DO UPDATE SET version = excluded.version, state = excluded.state, suspended = excluded.suspended,
         fence = excluded.fence, updated_at = excluded.updated_at
       WHERE r.fence <= excluded.fence`,
    ),
    del: prepared(`DELETE FROM ${t} WHERE name = $1 AND fence = 0`),
    tomb: prepared(`UPDATE ${t} SET state = NULL, suspended = NULL, fence = $2, updated_at = clock_timestamp() WHERE name = $1 AND fence <= $2`),
    fenceOf: prepared(`SELECT fence::text AS fence FROM ${t} WHERE name = $1`),
    list: prepared(`SELECT name FROM ${t} WHERE state IS NOT NULL`),
    suspended: prepared(`SELECT name, suspended FROM ${t} WHERE suspended IS NOT NULL`),
    approvals: prepared(`SELECT name, version, state FROM ${t} WHERE ${HOLDS_APPROVALS_SQL} AND ($1::text IS NULL OR strpos(state, $1::text) > 0) AND ($2::text IS NULL OR strpos(state, $2::text) > 0)`),
    claim: prepared(
      `INSERT INTO ${t} AS r (name, version, state, suspended, fence, updated_at)
       SELECT n, ${STATE_RECORD_VERSION}, NULL, NULL, $2, clock_timestamp() FROM unnest($1::bytea[]) AS n
       ON CONFLICT (name) DO UPDATE SET fence = excluded.fence, updated_at = excluded.updated_at WHERE r.fence <= excluded.fence
       RETURNING name`,
    ),
    next: prepared(`SELECT nextval('${seq.replaceAll("'", "''")}')::text AS fence`),
  };
}

function checkFence(fence: unknown, what: string): number {
  if (typeof fence !== "number" || !Number.isSafeInteger(fence) || fence < 1) {
    throw new InvalidArgumentError("fence", `${what} needs a fence drawn from nextFence() (a positive whole number), got ${describeValue(fence)}`);
  }
  return fence;
}

const encodeName = (name: string): Buffer => Buffer.from(name, "utf8");
const decodeName = (bytes: Buffer): string => bytes.toString("utf8");

/**
 * A {@link StateStore} in PostgreSQL (`pg` 8), for many processes and
 * machines sharing one store.
 *
 * - The state is stored as JSON **text**, byte for byte what
 *   `JSON.stringify` wrote (`jsonb` would reorder keys and refuse `\u0000`);
 *   the suspension marker is also in its own nullable column `suspended`,
 *   written by the same statement, with a partial index, so
 *   {@link PostgresStateStore.listSuspended} is one indexed query.
 * - Every `set` is one `INSERT … ON CONFLICT DO UPDATE` statement.
 * - Records carry a schema version; `get` refuses an unknown one, or a
 *   record that is not a JSON object, with `STATE_SCHEMA`.
 * - **Fencing.** A row carries the fence of the process that owns it.
 *   {@link PostgresStateStore.nextFence} draws a fence from one database
 *   sequence; {@link PostgresStateStore.claim} moves rows to it;
 *   {@link PostgresStateStore.fenced} gives the owner a `StateStore` whose
 *   writes carry it. A write whose fence is older than the row's changes
 *   nothing and rejects with `STATE_FENCED`. The store itself writes with
 *   fence 0: single-process use needs no fence, and a row once claimed can
 *   no longer be written without one.
 * - The table (and its index and the fence sequence) is created on first
 *   use, or by `civitas state migrate` / {@link PostgresStateStore.migrate};
 *   an existing table of another shape is refused (`STORE_UNAVAILABLE`) and
 *   never altered.
 * - A stopped or unreachable server, or a lost connection, rejects with
 *   `STORE_UNAVAILABLE` within the pool's connection (or query) timeout,
 *   never hangs.
 *
 * The runtime never closes a store; close it yourself after `runtime.stop()`.
 * A store made from `{ pool }` never ends that pool.
 *
 * @example
 * ```ts
 * import { PostgresStateStore } from "civitas-ts/postgres";
 * const store = new PostgresStateStore({ connectionString: "postgres://app@db/app" });
 * const fence = await store.nextFence();
 * await store.claim(["payer"], fence);
 * const runtime = new Runtime({ root, store: store.fenced(fence) });
 * ```
 */
export class PostgresStateStore implements StateStore {
  /**
   * Always `true`: a `set` that resolved is committed.
   * @defaultValue `true`
   */
  readonly durable = true;
  /** The records table, as given (`schema.table` or `table`). */
  readonly table: string;
  /** The fence this handle writes with: 0 for the store, the bound fence for a {@link PostgresStateStore.fenced} view. */
  readonly fence: number;

  readonly #core: Core;
  #closed = false;

  /**
   * Makes the store. Nothing is connected or created yet: the first call does.
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad connection, table or option;
   *   `STORE_UNAVAILABLE` when `pg` is not installed (with the command that installs it).
   */
  constructor(connection: PostgresConnection, options?: PostgresStateStoreOptions);
  /** @internal a fenced view sharing `core`. */
  constructor(connection: PostgresConnection, options: PostgresStateStoreOptions | undefined, view: { core: unknown; fence: number });
  constructor(connection: PostgresConnection, options: PostgresStateStoreOptions = {}, view?: { core: unknown; fence: number }) {
    if (view !== undefined) {
      this.#core = view.core as Core;
      this.fence = view.fence;
      this.table = this.#core.table.text;
      return;
    }
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `new PostgresStateStore(connection, options) takes an options object (or nothing), got ${describeValue(options)}`);
    }
    const table = tableName("table", options.table ?? DEFAULT_TABLE, "PostgresStateStore");
    const sequenceOption = options.fenceSequence ?? (table.schema === undefined ? DEFAULT_SEQUENCE : `${table.schema}.${DEFAULT_SEQUENCE}`);
    const sequence = tableName("fenceSequence", sequenceOption, "PostgresStateStore");
    const label = `PostgresStateStore(${table.text})`;
    const logger = options.logger ?? stderrLogger;
    const { pool, owned, where } = openPool(connection, options, label, (error) =>
      logger.warn(`${label}: a pooled PostgreSQL connection was lost (the next call reconnects)`, { code: (error as { code?: unknown }).code, message: error.message }),
    );
    this.#core = { pool, owned, table, sequence, label, where, ready: undefined, closing: undefined, sql: statements(table.sql, sequence.sql) };
    this.table = table.text;
    this.fence = 0;
  }

  /**
   * A `StateStore` on the same pool and table whose writes (`set`, `delete`)
   * carry `fence`: give it to the `Runtime` of the process that owns the
   * agents. Once any row is claimed by a newer fence, this view's writes to
   * it reject with `STATE_FENCED` and change nothing. Closing the view
   * closes only the view.
   * @throws {@link InvalidArgumentError} for a fence that is not a positive whole number.
   */
  fenced(fence: number): PostgresStateStore {
    checkFence(fence, "PostgresStateStore.fenced(fence)");
    return new PostgresStateStore({ pool: this.#core.pool }, undefined, { core: this.#core, fence });
  }

  /**
   * Draws a new fence from the database sequence: larger than every fence
   * drawn before, by any process.
   * @throws (rejects) `STORE_UNAVAILABLE`, `STORE_CLOSED`.
   */
  async nextFence(): Promise<number> {
    const result = await this.#query("drawing a fence", this.#core.sql.next, []);
    return int8((result.rows[0] as { fence: string }).fence);
  }

  /**
   * Moves the rows of `names` to `fence` (creating empty rows that hold only
   * the fence for names without state, so a former owner cannot create them
   * either), in one statement. Rows already at `fence` stay; the former
   * owner's writes are refused from now on. On a {@link PostgresStateStore.fenced}
   * view `fence` defaults to the view's own, as the `Runtime` given the view
   * calls it at each agent's first start (after that agent's `agent.claimed`
   * receipt): a takeover needs no `claim` of its own.
   * @throws (rejects) `STATE_FENCED` when a row already carries a newer fence
   *   (the others are claimed); `INVALID_ARGUMENT`, `STORE_UNAVAILABLE`, `STORE_CLOSED`.
   */
  async claim(names: readonly string[], fence: number = this.fence): Promise<void> {
    this.#assertOpen();
    checkFence(fence, "PostgresStateStore.claim(names, fence)");
    if (!Array.isArray(names)) throw new InvalidArgumentError("names", `PostgresStateStore.claim(names, fence) needs an array of names, got ${describeValue(names)}`);
    const unique: string[] = [...new Set<string>(names)];
    for (const name of unique) assertStateName(name);
    if (unique.length === 0) return;
    const result = await this.#query("claiming rows", this.#core.sql.claim, [unique.map(encodeName), fence]);
    if (result.rows.length === unique.length) return;
    const claimed = new Set<string>(result.rows.map((row) => decodeName(row.name as Buffer)));
    const lost = unique.find((name) => !claimed.has(name)) as string;
    throw new StateFencedError(lost, fence, await this.#fenceOf(lost));
  }

  /** {@inheritDoc StateStore.get} */
  async get(name: string): Promise<JsonObject | undefined> {
    this.#assertOpen();
    assertStateName(name);
    const result = await this.#query("reading", this.#core.sql.get, [encodeName(name)]);
    const row = result.rows[0] as { version: unknown; state: string | null } | undefined;
    if (row === undefined || row.state === null) return undefined;
    return decodeState(name, row.version, row.state);
  }

  /**
   * Replaces the state of `name` (and its marker column) in one statement,
   * unless the row carries a newer fence than this handle's.
   * @throws (rejects) `STATE_FENCED` when the row is owned by a newer fence (nothing changed);
   *   `PAYLOAD_NOT_SERIALIZABLE`, `INVALID_ARGUMENT`, `STORE_CLOSED`, `STORE_UNAVAILABLE`.
   */
  async set(name: string, state: JsonObject): Promise<void> {
    this.#assertOpen();
    assertStateName(name);
    const text = encodeState(name, state);
    const marker = state[SUSPENSION_KEY];
    const values = [encodeName(name), STATE_RECORD_VERSION, text, marker === undefined ? null : JSON.stringify(marker), this.fence];
    const result = await this.#query("writing", this.#core.sql.set, values);
    if (result.rowCount === 0) throw new StateFencedError(name, this.fence, await this.#fenceOf(name));
  }

  /**
   * Removes the state of `name`. A fenced view leaves an empty row holding
   * its fence, so a former owner cannot write the name back.
   * @throws (rejects) `STATE_FENCED` when the row is owned by a newer fence; `INVALID_ARGUMENT`, `STORE_CLOSED`, `STORE_UNAVAILABLE`.
   */
  async delete(name: string): Promise<void> {
    this.#assertOpen();
    assertStateName(name);
    const key = encodeName(name);
    const result = this.fence === 0 ? await this.#query("deleting", this.#core.sql.del, [key]) : await this.#query("deleting", this.#core.sql.tomb, [key, this.fence]);
    if (result.rowCount !== 0) return;
    const current = await this.#fenceOf(name);
    if (current !== undefined && current > this.fence) throw new StateFencedError(name, this.fence, current);
  }

  /** {@inheritDoc StateStore.list} */
  async list(): Promise<string[]> {
    const result = await this.#query("listing", this.#core.sql.list, []);
    return result.rows.map((row) => decodeName((row as { name: Buffer }).name)).sort();
  }

  /**
   * Every suspended agent in the store, wherever it runs, from the marker
   * column in one indexed query, sorted by name.
   * @throws (rejects) `STATE_SCHEMA` when a marker column does not hold a marker; `STORE_CLOSED`, `STORE_UNAVAILABLE`.
   */
  async listSuspended(): Promise<StoredSuspension[]> {
    const result = await this.#query("listing suspensions", this.#core.sql.suspended, []);
    const found: StoredSuspension[] = [];
    for (const row of result.rows as { name: Buffer; suspended: string }[]) {
      const name = decodeName(row.name);
      const marker = readMarker(name, decodeState(name, STATE_RECORD_VERSION, `{${JSON.stringify(SUSPENSION_KEY)}:${row.suspended}}`));
      if (marker !== undefined) found.push({ name, marker });
    }
    return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The stored states of every agent that holds approval requests, wherever
   * it runs, sorted by name: one query on the partial index of such rows
   * (what `runtime.approvals.list({ scope: "cluster" })` reads, and where a
   * vote for a request of another process finds its agent). With `status`
   * (or `approvalId`), only rows whose text holds a request of that status
   * (or id): a pre-filter, read each request's own fields.
   * @example
   * ```ts
   * for (const { name, state } of await store.listApprovalStates({ status: "pending" })) console.log(name, state[APPROVALS_KEY]);
   * ```
   * @throws (rejects) `STATE_SCHEMA` for a row that does not hold a state; `STORE_CLOSED`, `STORE_UNAVAILABLE`.
   */
  async listApprovalStates(options: { status?: ApprovalStatus; approvalId?: string } = {}): Promise<StoredApprovalState[]> {
    const status = options.status === undefined ? null : `"status":${JSON.stringify(options.status)}`;
    const id = options.approvalId === undefined ? null : `"approvalId":${JSON.stringify(options.approvalId)}`;
    const result = await this.#query("listing approval requests", this.#core.sql.approvals, [status, id]);
    const found: StoredApprovalState[] = [];
    for (const row of result.rows as { name: Buffer; version: unknown; state: string }[]) {
      const name = decodeName(row.name);
      found.push({ name, state: decodeState(name, row.version, row.state) });
    }
    return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Creates the table, its index and the fence sequence if missing, checking
   * an existing table's shape (what `civitas state migrate` runs). Idempotent.
   * @throws (rejects) `STORE_UNAVAILABLE` for a table of another shape or an unreachable server.
   */
  async migrate(): Promise<void> {
    this.#assertOpen();
    const core = this.#core;
    try {
      await ensureSchema(core.pool, core.table, core.sequence, core.label, true);
    } catch (error) {
      throw unavailable(core.label, core.where, "migrating the schema", error, setupHint(core));
    }
    core.ready = Promise.resolve();
  }

  /**
   * Closes this handle; later calls reject with `STORE_CLOSED`. Closing the
   * store (not a fenced view) ends the pool it made from a connection string,
   * after the calls in flight; a given pool is never ended. Idempotent.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.fence !== 0) return;
    const core = this.#core;
    core.closing ??= core.owned ? core.pool.end() : Promise.resolve();
    await core.closing;
  }

  #assertOpen(): void {
    if (this.#closed || this.#core.closing !== undefined) throw new StoreClosedError(this.#core.label);
  }

  async #fenceOf(name: string): Promise<number | undefined> {
    const result = await this.#query("reading the fence", this.#core.sql.fenceOf, [encodeName(name)]).catch(() => undefined);
    const row = result?.rows[0] as { fence: string } | undefined;
    return row === undefined ? undefined : int8(row.fence);
  }

  /** Runs one statement once the schema is ready, turning failures into `STORE_UNAVAILABLE`. */
  async #query(doing: string, statement: pg.QueryConfig, values: unknown[]): Promise<pg.QueryResult<Record<string, unknown>>> {
    this.#assertOpen();
    const core = this.#core;
    try {
      core.ready ??= ensureSchema(core.pool, core.table, core.sequence, core.label, false).catch((error: unknown) => {
        core.ready = undefined; // the next call tries again
        throw error;
      });
      await core.ready;
      return await core.pool.query<Record<string, unknown>>({ ...statement, values });
    } catch (error) {
      const failure = unavailable(core.label, core.where, doing, error, setupHint(core));
      // The table (or its schema) was dropped after it was checked: the next call checks and creates it again.
      if (failure.code === "STORE_SCHEMA_MISSING") core.ready = undefined;
      throw failure;
    }
  }
}
