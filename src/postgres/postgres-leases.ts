import { performance } from "node:perf_hooks";
import type pg from "pg";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { stderrLogger, type Logger } from "../logging/logger.js";
import { StoreClosedError } from "../state/store-closed-error.js";
import { createSequenceSql } from "./postgres-state-schema.js";
import { int8, openPool, tableName, unavailable, type PostgresConnection, type PostgresPoolOptions, type TableName } from "./pg-connection.js";
import { ensureTable } from "./table-shape.js";

/** Options of {@link PostgresLeases}. */
export interface PostgresLeasesOptions extends PostgresPoolOptions {
  /**
   * The lease table, created on first use if missing; a plain identifier,
   * optionally schema-qualified.
   * @defaultValue `"civitas_leases"`
   */
  table?: string;
  /**
   * The sequence fences are drawn from: the same one as the state store's,
   * so a lease's fence can claim state rows.
   * @defaultValue `"civitas_fence"` in the table's schema
   */
  fenceSequence?: string;
  /**
   * This process's monotonic clock in milliseconds, for the local expiry
   * rule (never compared with the database's clock).
   * @defaultValue `performance.now`
   */
  now?: () => number;
  /**
   * Where connection errors the pool reports on its own go (a pool the leases make).
   * @defaultValue warnings to stderr
   */
  logger?: Logger;
}

const COLUMNS = {
  grp: { type: "text", nullable: false },
  owner: { type: "text", nullable: false },
  fence: { type: "bigint", nullable: false },
  ttl_ms: { type: "integer", nullable: false },
  expires_at: { type: "timestamp with time zone", nullable: false },
};
const DEFINITION = "(grp text PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL, ttl_ms integer NOT NULL, expires_at timestamptz NOT NULL)";
const MAX_TTL_MS = 2 ** 31 - 1;

function checkText(option: string, value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0 || value.includes("\u0000")) {
    throw new InvalidArgumentError(option, `${what} needs a non-empty string without U+0000, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Leases on named groups in PostgreSQL: at most one owner holds a group at a
 * time, each grant carries a new fence from the shared fence sequence, and
 * expiry is decided by the database's clock (`clock_timestamp()`), so
 * process clocks do not matter.
 *
 * The local rule: a holder counts a group as lost `ttlMs` after it *sent*
 * the request that granted or last renewed it (its own monotonic clock), and
 * at once when a renewal fails or comes back without the group. The database
 * sets the expiry after receiving that request, so the holder gives the
 * group up before the database can hand it to someone else. Renew well
 * inside the TTL (a third of it is a good period) and check
 * {@link PostgresLeases.holds} before acting as the owner.
 *
 * @example
 * ```ts
 * const leases = new PostgresLeases({ connectionString });
 * const fence = await leases.acquire("payments", "host-a:4242", 15_000);
 * if (fence !== null) {
 *   await store.claim(names, fence);
 *   setInterval(() => void leases.renew("host-a:4242", ["payments"]), 5_000).unref();
 * }
 * ```
 */
export class PostgresLeases {
  /** The lease table, as given. */
  readonly table: string;

  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #where: string;
  readonly #label: string;
  readonly #table: TableName;
  readonly #sequence: TableName;
  readonly #now: () => number;
  /** `owner\u0000group` → local deadline (monotonic ms). */
  readonly #deadlines = new Map<string, number>();
  #ready: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @throws {@link InvalidArgumentError} for a bad connection or option;
   *   `STORE_UNAVAILABLE` when `pg` is not installed.
   */
  constructor(connection: PostgresConnection, options: PostgresLeasesOptions = {}) {
    const table = tableName("table", options.table ?? "civitas_leases", "PostgresLeases");
    this.#sequence = tableName("fenceSequence", options.fenceSequence ?? (table.schema === undefined ? "civitas_fence" : `${table.schema}.civitas_fence`), "PostgresLeases");
    const now = options.now ?? (() => performance.now());
    if (typeof now !== "function") throw new InvalidArgumentError("now", `PostgresLeases option now must be a function returning milliseconds, got ${describeValue(now)}`);
    this.#now = now;
    this.#table = table;
    this.table = table.text;
    this.#label = `PostgresLeases(${table.text})`;
    const logger = options.logger ?? stderrLogger;
    const opened = openPool(connection, options, this.#label, (error) => logger.warn(`${this.#label}: a pooled PostgreSQL connection was lost`, { message: error.message }));
    this.#pool = opened.pool;
    this.#owned = opened.owned;
    this.#where = opened.where;
  }

  /**
   * Grants `group` to `owner` for `ttlMs` when nobody holds it (or its lease
   * expired by the database's clock), with a new fence; an owner that holds
   * it already keeps its fence and gets the TTL renewed.
   * @returns the fence, or `null` when another owner holds the group.
   * @throws (rejects) `INVALID_ARGUMENT`, `STORE_UNAVAILABLE`, `STORE_CLOSED`.
   */
  async acquire(group: string, owner: string, ttlMs: number): Promise<number | null> {
    checkText("group", group, "PostgresLeases.acquire(group, owner, ttlMs)");
    checkText("owner", owner, "PostgresLeases.acquire(group, owner, ttlMs)");
    if (!Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) {
      throw new InvalidArgumentError("ttlMs", `PostgresLeases.acquire(group, owner, ttlMs) needs ttlMs as a whole number of milliseconds from 1 to ${MAX_TTL_MS}, got ${describeValue(ttlMs)}`);
    }
    const sentAt = this.#now();
    const t = this.#table.sql;
    const result = await this.#query(
      "acquiring a lease",
      `INSERT INTO ${t} AS l (grp, owner, fence, ttl_ms, expires_at)
       VALUES ($1, $2, nextval('${this.#sequence.sql.replaceAll("'", "''")}'), $3::integer, clock_timestamp() + $3::integer * interval '1 millisecond')
       ON CONFLICT (grp) DO UPDATE SET owner = excluded.owner,
         fence = CASE WHEN l.owner = excluded.owner AND l.expires_at > clock_timestamp() THEN l.fence ELSE excluded.fence END,
         ttl_ms = excluded.ttl_ms, expires_at = excluded.expires_at
       WHERE l.expires_at <= clock_timestamp() OR l.owner = excluded.owner
       RETURNING fence::text AS fence`,
      [group, owner, ttlMs],
    );
    const row = result.rows[0] as { fence: string } | undefined;
    const key = `${owner}\u0000${group}`;
    if (row === undefined) {
      this.#deadlines.delete(key);
      return null;
    }
    this.#deadlines.set(key, sentAt + ttlMs);
    return int8(row.fence);
  }

  /**
   * Renews the leases `owner` holds on `groups`, each by its own TTL, in one
   * statement. A group that comes back without being renewed (it expired, or
   * someone else holds it now) is lost at once; when the call fails every
   * one of `groups` is lost.
   * @returns the groups still held.
   * @throws (rejects) `STORE_UNAVAILABLE` (all of `groups` then count as lost), `INVALID_ARGUMENT`, `STORE_CLOSED`.
   */
  async renew(owner: string, groups: readonly string[]): Promise<string[]> {
    checkText("owner", owner, "PostgresLeases.renew(owner, groups)");
    if (!Array.isArray(groups)) throw new InvalidArgumentError("groups", `PostgresLeases.renew(owner, groups) needs an array of groups, got ${describeValue(groups)}`);
    const wanted: string[] = groups.map((g: unknown) => checkText("groups", g, "PostgresLeases.renew(owner, groups)"));
    const sentAt = this.#now();
    let result: pg.QueryResult;
    try {
      result = await this.#query(
        "renewing leases",
        `UPDATE ${this.#table.sql} SET expires_at = clock_timestamp() + ttl_ms * interval '1 millisecond'
         WHERE owner = $1 AND grp = ANY($2::text[]) AND expires_at > clock_timestamp()
         RETURNING grp, ttl_ms`,
        [owner, wanted],
      );
    } catch (error) {
      for (const group of wanted) this.#deadlines.delete(`${owner}\u0000${group}`);
      throw error;
    }
    const held = new Map((result.rows as { grp: string; ttl_ms: number }[]).map((row) => [row.grp, row.ttl_ms]));
    for (const group of wanted) {
      const ttl = held.get(group);
      if (ttl === undefined) this.#deadlines.delete(`${owner}\u0000${group}`);
      else this.#deadlines.set(`${owner}\u0000${group}`, sentAt + ttl);
    }
    return wanted.filter((g) => held.has(g));
  }

  /**
   * Gives up `owner`'s leases on `groups`: another owner can acquire them at once.
   * @throws (rejects) `STORE_UNAVAILABLE`, `INVALID_ARGUMENT`, `STORE_CLOSED`.
   */
  async release(owner: string, groups: readonly string[]): Promise<void> {
    checkText("owner", owner, "PostgresLeases.release(owner, groups)");
    const wanted: string[] = (Array.isArray(groups) ? groups : [groups]).map((g: unknown) => checkText("groups", g, "PostgresLeases.release(owner, groups)"));
    for (const group of wanted) this.#deadlines.delete(`${owner}\u0000${group}`);
    await this.#query("releasing leases", `DELETE FROM ${this.#table.sql} WHERE owner = $1 AND grp = ANY($2::text[])`, [owner, wanted]);
  }

  /**
   * Whether `owner` may still act as the holder of `group` by the local
   * rule: granted or renewed by this instance, and less than its TTL has
   * passed since that request was sent.
   */
  holds(owner: string, group: string): boolean {
    const deadline = this.#deadlines.get(`${owner}\u0000${group}`);
    return deadline !== undefined && this.#now() < deadline;
  }

  /** Ends the pool the leases made (a given pool is never ended). Idempotent. Leases held are not released. */
  async close(): Promise<void> {
    this.#closing ??= this.#owned ? this.#pool.end() : Promise.resolve();
    await this.#closing;
  }

  async #query(doing: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
    if (this.#closing !== undefined) throw new StoreClosedError(this.#label);
    try {
      this.#ready ??= ensureTable(
        this.#pool,
        this.#table,
        COLUMNS,
        [createSequenceSql(this.#sequence.sql), `CREATE TABLE IF NOT EXISTS ${this.#table.sql} ${DEFINITION}`],
        this.#label,
        DEFINITION,
        [this.#sequence],
      ).catch((error: unknown) => {
        this.#ready = undefined;
        throw error;
      });
      await this.#ready;
      return await this.#pool.query(text, values);
    } catch (error) {
      const failure = unavailable(this.#label, this.#where, doing, error, `The leases create ${this.#table.text} and the sequence ${this.#sequence.text} (and their schema) when the table is missing, as a user allowed to; check the table and fenceSequence options`);
      if (failure.code === "STORE_SCHEMA_MISSING") this.#ready = undefined;
      throw failure;
    }
  }
}
