import type pg from "pg";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, StateFencedError } from "../errors/errors.js";
import { stderrLogger, type Logger } from "../logging/logger.js";
import { int8, openPool, tableName, unavailable, withClient, type PostgresConnection, type PostgresPoolOptions, type TableName } from "./pg-connection.js";
import { ensureTable } from "./table-shape.js";
import type { AuditAnchor } from "../audit/audit-anchor.js";
import { AuditCorruptError, AuditKeyMissingError, AuditSinkClosedError } from "../audit/audit-errors.js";
import { bearsOnDecisions, SETTLEMENT_EVENTS, SETTLEMENT_REFUSED, type AuditEvent, type AuditSink } from "../audit/audit-event.js";
import { writerFence } from "../audit/owner-fence.js";
import { auditEventProblem } from "../audit/audit-event-check.js";
import { SettlementIndex } from "../audit/settlement-index.js";
import { encodeRow, GENESIS_PREV, isParseFailure, keyBytes, macEquals, macOf, parseRowLine, signRow, type AuditRow } from "../audit/audit-row.js";

/** Options of {@link PostgresAuditSink}: where (`pool` or `connectionString`), and how rows are signed. */
export type PostgresAuditSinkOptions = PostgresConnection &
  PostgresPoolOptions & {
    /**
     * The HMAC-SHA256 key (a string is UTF-8 encoded).
     * @defaultValue the `CIVITAS_AUDIT_KEY` environment variable
     */
    key?: string | Uint8Array;
    /**
     * Names the key in every row (`keyId`), for rotation.
     * @defaultValue `"default"`
     */
    keyId?: string;
    /**
     * Recorded as every row's `signerId` in place of the event's own.
     * @defaultValue the event's `signerId`
     */
    signerId?: string;
    /**
     * The table holding the chain (one chain per table), created on first
     * use with its head table `<table>_head`; a plain identifier, optionally
     * schema-qualified, at most 58 characters.
     * @defaultValue `"civitas_audit"`
     */
    table?: string;
    /**
     * The table of the `PostgresStateStore` whose fences decide who owns each
     * agent (same database). With it, a decision's receipt (`agent.resume`,
     * `agent.deny`, `agent.suspend.cancelled`, `agent.settlement.refused`) is appended only when its
     * writer's fence (`details.fence`, 0 when absent) is not older than the
     * agent's row there, checked in the append's transaction (the row is
     * locked `FOR SHARE`, so a claim waits or wins): a former owner's decision
     * after a takeover is refused with `STATE_FENCED` and never enters the chain.
     * @defaultValue no check (readers still ignore a fenced-out owner's receipts, docs/postgres.md)
     */
    stateTable?: string;
    /**
     * Where connection errors the pool reports on its own go (a pool the sink makes).
     * @defaultValue warnings to stderr
     */
    logger?: Logger;
  };

const ROW_COLUMNS = { seq: { type: "bigint", nullable: false }, line: { type: "text", nullable: false } };
const HEAD_COLUMNS = { chain: { type: "boolean", nullable: false }, seq: { type: "bigint", nullable: false }, hash: { type: "text", nullable: false } };

/** The chain's table and its head table. @internal */
export function auditTables(option: unknown, component: string): { rows: TableName; head: TableName } {
  const rows = tableName("table", option ?? "civitas_audit", component);
  if (rows.name.length > 58) throw new InvalidArgumentError("table", `${component} option table must name a table of at most 58 characters (its head table adds '_head'), got ${describeValue(option)}`);
  const head = tableName("table", `${rows.schema === undefined ? "" : `${rows.schema}.`}${rows.name}_head`, component);
  return { rows, head };
}

/**
 * An {@link AuditSink} that appends the same rows as `JsonlAuditSink`
 * (SPEC §11.13: hash-chained, HMAC-signed, canonical JSON) to one chain in a
 * PostgreSQL table, for several processes that share one audit story.
 *
 * - Each row is stored as its canonical JSON line (`line text`), byte for
 *   byte what the JSONL sink writes, keyed by `seq`.
 * - Appends from any number of sinks and processes are serialized by the
 *   database: each `emit` runs one transaction that locks the chain head
 *   (`SELECT … FOR UPDATE` on the one row of `<table>_head`), inserts the
 *   row chained to it and moves the head, then commits (three round trips). `emit` resolves with
 *   the row's {@link AuditAnchor} once the commit is durable; a failed
 *   append rolls back, rejects, and leaves the chain as it was.
 * - Within one sink, emits are written in call order.
 * - `civitas audit export --store postgres://…` (or {@link PostgresAuditSink.rows})
 *   gives the log to the offline verifiers.
 *
 * Whoever creates the sink closes it; the runtime never does. A given pool is never ended.
 *
 * @example
 * ```ts
 * import { PostgresAuditSink } from "civitas-ts/postgres";
 * const audit = new PostgresAuditSink({ pool, key: process.env.CIVITAS_AUDIT_KEY! });
 * const runtime = new Runtime({ root, store, auditSink: audit });
 * ```
 * @throws `AUDIT_KEY_MISSING` when no key is given and `CIVITAS_AUDIT_KEY` is unset;
 *   `INVALID_ARGUMENT` for a bad option; `STORE_UNAVAILABLE` when `pg` is not installed.
 */
export class PostgresAuditSink implements AuditSink {
  /** The chain's table, as given. */
  readonly table: string;

  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #where: string;
  readonly #label: string;
  readonly #tables: { rows: TableName; head: TableName };
  readonly #stateTable: TableName | undefined;
  readonly #key: Uint8Array;
  readonly #keyId: string;
  /** Settles once the last emit that bears on a decision (audit-event.ts) asked for so far is written or failed. */
  #decisionsWritten: Promise<void> = Promise.resolve();
  /** The decisions on record, taken in as the chain grows (made on the first lookup), and the lookup now catching up. */
  #settlements: SettlementIndex | undefined;
  #indexing: Promise<void> = Promise.resolve();
  readonly #signerId: string | undefined;
  #ready: Promise<void> | undefined;
  #queue: Promise<void> = Promise.resolve();
  #closing: Promise<void> | undefined;

  constructor(options: PostgresAuditSinkOptions) {
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `new PostgresAuditSink(options) needs { pool } or { connectionString }, and key, got ${describeValue(options)}`);
    }
    this.#tables = auditTables(options.table, "PostgresAuditSink");
    this.table = this.#tables.rows.text;
    this.#stateTable = options.stateTable === undefined ? undefined : tableName("stateTable", options.stateTable, "PostgresAuditSink");
    this.#label = `PostgresAuditSink(${this.table})`;
    const key = keyBytes(options.key) ?? (options.key === undefined ? keyBytes(process.env.CIVITAS_AUDIT_KEY) : undefined);
    if (key === undefined) throw new AuditKeyMissingError(this.#label);
    const keyId = options.keyId ?? "default";
    if (typeof keyId !== "string" || keyId.length === 0) throw new InvalidArgumentError("keyId", `PostgresAuditSink keyId must be a non-empty string, got ${describeValue(keyId)}`);
    const signerId: unknown = options.signerId;
    if (signerId !== undefined && (typeof signerId !== "string" || signerId.length === 0)) {
      throw new InvalidArgumentError("signerId", `PostgresAuditSink signerId must be a non-empty string naming who signs the rows, or left out, got ${describeValue(signerId)}`);
    }
    this.#key = key;
    this.#keyId = keyId;
    this.#signerId = signerId;
    const logger = options.logger ?? stderrLogger;
    const connection = options.pool !== undefined ? { pool: options.pool } : { connectionString: options.connectionString };
    const opened = openPool(connection, options, this.#label, (error) => logger.warn(`${this.#label}: a pooled PostgreSQL connection was lost`, { message: error.message }));
    this.#pool = opened.pool;
    this.#owned = opened.owned;
    this.#where = opened.where;
  }

  /**
   * Appends `event` as the next row of the chain, in one transaction, and
   * resolves with its anchor once committed.
   * @throws (rejects) `AUDIT_SINK_CLOSED` after `close()`; `INVALID_ARGUMENT` when `details` is not plain JSON;
   *   `STATE_FENCED` for a decision of a fenced-out owner (with `stateTable`: nothing appended);
   *   `STORE_UNAVAILABLE` when the database fails (the row is then not in the chain, and the chain is intact);
   *   `AUDIT_CORRUPT` when the chain's last row was signed under this keyId with another key.
   */
  emit(event: AuditEvent): Promise<AuditAnchor> {
    if (this.#closing !== undefined) return Promise.reject(new AuditSinkClosedError(this.#label));
    const problem = auditEventProblem(event);
    if (problem !== undefined) return Promise.reject(problem);
    const run = this.#queue.then(() => this.#append(event));
    this.#queue = run.then(
      () => undefined,
      () => undefined,
    );
    if (bearsOnDecisions(event.event)) this.#decisionsWritten = this.#queue;
    return run;
  }

  /**
   * Every row of the chain, in order, as stored: what `verifyAuditLog(rows, { key })`
   * and `verifySuspension(rows, agent, { key })` take directly.
   * @throws (rejects) `AUDIT_CORRUPT` for a stored line that is not a row; `STORE_UNAVAILABLE`.
   */
  async rows(): Promise<AuditRow[]> {
    const rows: AuditRow[] = [];
    for await (const line of readAuditLines(this.#pool, this.#tables.rows, this.#label, this.#where)) {
      const row = parseRowLine(Buffer.from(line, "utf8"));
      if (isParseFailure(row)) throw new AuditCorruptError(this.#label, `${this.#label}: row ${rows.length} is not a row (${row.message}); export the log and verify it`, { index: rows.length });
      rows.push(row);
    }
    return rows;
  }

  /**
   * The decision on record for the pause `suspensionId` of `agent`, once the
   * emits already asked for are written (see {@link AuditSink.recordedSettlement}).
   * @throws (rejects) `AUDIT_CORRUPT`; `STORE_UNAVAILABLE`.
   */
  async recordedSettlement(agent: string, suspensionId: string): Promise<AuditEvent | undefined> {
    // Only a queued row that can bear on a decision must be written first (a start's receipt need not be).
    await this.#decisionsWritten;
    this.#ready ??= this.#prepare().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    await this.#ready;
    this.#settlements ??= new SettlementIndex(this.#keyId, this.#key);
    const index = this.#settlements;
    const caughtUp = this.#indexing.then(() => this.#catchUp(index));
    this.#indexing = caughtUp.catch(() => undefined);
    await caughtUp;
    return index.decision(agent, suspensionId);
  }

  /** Takes the rows appended since the last lookup into `index` (one query when there are none). */
  async #catchUp(index: SettlementIndex): Promise<void> {
    for await (const line of readAuditLines(this.#pool, this.#tables.rows, this.#label, this.#where, index.nextSeq - 1)) {
      const row = parseRowLine(Buffer.from(line, "utf8"));
      if (isParseFailure(row)) throw new AuditCorruptError(this.#label, `${this.#label}: row ${index.nextSeq} is not a row (${row.message}); export the log and verify it`, { index: index.nextSeq });
      if (!index.take(row)) return; // the chain is broken here: nothing after it is a decision
    }
  }

  /** Waits for pending emits, then ends the pool the sink made (a given pool is never ended). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#queue.then(() => (this.#owned ? this.#pool.end() : undefined));
    return this.#closing;
  }

  async #append(event: AuditEvent): Promise<AuditAnchor> {
    try {
      this.#ready ??= this.#prepare().catch((error: unknown) => {
        this.#ready = undefined;
        throw error;
      });
      await this.#ready;
      const { rows, head } = this.#tables;
      return await withClient(this.#pool, async (client) => {
        try {
          // One round trip: a simple-protocol query may hold several statements (no parameters needed here).
          const results = (await client.query(`BEGIN; SELECT seq::text AS seq, hash FROM ${head.sql} WHERE chain FOR UPDATE`)) as unknown as pg.QueryResult<{ seq: string; hash: string }>[];
          const top = results[1]?.rows[0];
          if (top === undefined) throw new AuditCorruptError(this.#label, `${this.#label}: the head table ${head.text} has no row; the chain cannot be continued safely, verify an export of it`);
          await this.#checkOwner(client, event);
          const row = signRow(
            {
              seq: int8(top.seq) + 1,
              ts: event.ts,
              event: event.event,
              agent: event.agent,
              signerId: this.#signerId ?? event.signerId,
              keyId: this.#keyId,
              details: event.details,
              prev: top.hash,
            },
            this.#key,
          );
          const line = encodeRow(row).toString("utf8").slice(0, -1);
          await client.query(`WITH appended AS (INSERT INTO ${rows.sql} (seq, line) VALUES ($1, $2)) UPDATE ${head.sql} SET seq = $1, hash = $3 WHERE chain`, [row.seq, line, row.hash]);
          await client.query("COMMIT");
          return { seq: row.seq, hash: row.hash };
        } catch (error) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw error;
        }
      });
    } catch (error) {
      const failure = unavailable(this.#label, this.#where, "appending an audit row", error, this.#setupHint());
      // A table dropped after it was checked (or a stateTable that does not exist): the next append checks again.
      if (failure.code === "STORE_SCHEMA_MISSING") this.#ready = undefined;
      throw failure;
    }
  }

  /** How the sink's tables are made, for a `STORE_SCHEMA_MISSING` error. */
  #setupHint(): string {
    const { rows, head } = this.#tables;
    const state = this.#stateTable === undefined ? "" : `; stateTable ${this.#stateTable.text} must name an existing PostgresStateStore table (its store creates it)`;
    return `The sink creates ${rows.text} and ${head.text} (and their schema) on its next append, as a user allowed to create them; check the table option${state}`;
  }

  /** Refuses (`STATE_FENCED`) a decision whose writer's fence is older than its agent's row in the state table; in the append's transaction. */
  async #checkOwner(client: pg.PoolClient, event: AuditEvent): Promise<void> {
    if (this.#stateTable === undefined || !(SETTLEMENT_EVENTS.has(event.event) || event.event === SETTLEMENT_REFUSED)) return;
    const fence = writerFence(event) ?? 0;
    const found = await client.query<{ fence: string }>(`SELECT fence::text AS fence FROM ${this.#stateTable.sql} WHERE name = $1 FOR SHARE`, [Buffer.from(event.agent, "utf8")]);
    const current = found.rows[0] === undefined ? 0 : int8(found.rows[0].fence);
    if (current > fence) {
      throw new StateFencedError(
        event.agent,
        fence,
        current,
        `${this.#label}: the ${event.event} of '${event.agent}' was refused: it was written at fence ${fence}, and fence ${current} owns '${event.agent}' now (another process took it over); nothing was appended. The new owner decides the pause`,
      );
    }
  }

  /** Creates the tables if missing (checking existing ones), and refuses a chain whose last row this key did not sign under this keyId. */
  async #prepare(): Promise<void> {
    const { rows, head } = this.#tables;
    await ensureTable(this.#pool, rows, ROW_COLUMNS, [`CREATE TABLE IF NOT EXISTS ${rows.sql} (seq bigint PRIMARY KEY, line text NOT NULL)`], this.#label, "(seq bigint PRIMARY KEY, line text NOT NULL)");
    await ensureTable(
      this.#pool,
      head,
      HEAD_COLUMNS,
      [
        `CREATE TABLE IF NOT EXISTS ${head.sql} (chain boolean PRIMARY KEY DEFAULT true CHECK (chain), seq bigint NOT NULL, hash text NOT NULL)`,
        `INSERT INTO ${head.sql} (chain, seq, hash) VALUES (true, -1, '${GENESIS_PREV}') ON CONFLICT (chain) DO NOTHING`,
      ],
      this.#label,
      "(chain boolean PRIMARY KEY, seq bigint NOT NULL, hash text NOT NULL)",
    );
    const last = await this.#pool.query<{ line: string }>(`SELECT line FROM ${rows.sql} ORDER BY seq DESC LIMIT 1`);
    const line = last.rows[0]?.line;
    if (line === undefined) return;
    const row = parseRowLine(Buffer.from(line, "utf8"));
    if (isParseFailure(row)) throw new AuditCorruptError(this.#label, `${this.#label}: the chain's last row is damaged (${row.message}); refusing to append to it, export and verify the log`);
    if (row.keyId === this.#keyId && !macEquals(macOf(row.hash, this.#key), row.mac)) {
      throw new AuditCorruptError(this.#label, `${this.#label}: the chain's last row was signed under keyId '${this.#keyId}' with a different key than the one given; pass the right key, or a new keyId when rotating keys`);
    }
  }
}

/** How many rows one query of {@link readAuditLines} reads. */
const AUDIT_PAGE_ROWS = 1000;

/**
 * The stored lines of a chain after `seq` `after` (all of them by default), in numeric `seq` order, read in pages keyed by `seq`.
 * @throws (rejects) `STORE_UNAVAILABLE` when the table cannot be read.
 * @internal
 */
export async function* readAuditLines(pool: pg.Pool, table: TableName, label: string, where: string, after = -1): AsyncGenerator<string> {
  for (;;) {
    let batch: pg.QueryResult<{ position: string; line: string }>;
    try {
      // The text of seq gets its own name: `ORDER BY seq` on an output column `seq::text AS seq` would sort as text (0, 1, 10, 100 …).
      batch = await pool.query<{ position: string; line: string }>(`SELECT seq::text AS position, line FROM ${table.sql} WHERE seq > $1 ORDER BY ${table.sql}.seq LIMIT ${AUDIT_PAGE_ROWS}`, [after]);
    } catch (error) {
      throw unavailable(label, where, "reading the audit chain", error, `A PostgresAuditSink creates ${table.text} on its first append; check the table option`);
    }
    for (const row of batch.rows) yield row.line;
    const last = batch.rows[batch.rows.length - 1];
    if (last === undefined || batch.rows.length < AUDIT_PAGE_ROWS) return;
    after = int8(last.position);
  }
}
