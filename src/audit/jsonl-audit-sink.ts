import { closeSync, fstatSync, mkdirSync, openSync, readSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { AuditAnchor } from "./audit-anchor.js";
import { auditEventProblem } from "./audit-event-check.js";
import { JsonlSettlements } from "./recorded-settlement.js";
import { bearsOnDecisions, type AuditEvent, type AuditSink } from "./audit-event.js";
import { AuditCorruptError, AuditKeyMissingError, AuditSinkClosedError, AuditUnreadableError } from "./audit-errors.js";
import {
  encodeRow,
  GENESIS_PREV,
  hashRow,
  isParseFailure,
  isTornRow,
  keyBytes,
  macEquals,
  macOf,
  parseRowLine,
  signRow,
} from "./audit-row.js";

/** Options of {@link JsonlAuditSink}. */
export interface JsonlAuditSinkOptions {
  /**
   * The HMAC-SHA256 key (a string is UTF-8 encoded).
   * @defaultValue the `CIVITAS_AUDIT_KEY` environment variable
   */
  key?: string | Uint8Array;
  /**
   * Names the key in every row (`keyId`), so that a verifier can pick the
   * right key after a rotation.
   * @defaultValue `"default"`
   */
  keyId?: string;
  /**
   * Recorded as every row's `signerId` in place of the event's own.
   * @defaultValue the event's `signerId`
   */
  signerId?: string;
}

const TAIL_CHUNK = 64 * 1024;

/** The end of an existing log: where to append, and what the next row chains to. */
interface LogEnd {
  size: number;
  seq: number;
  prev: string;
}

/**
 * An {@link AuditSink} that appends hash-chained, HMAC-signed rows to a JSONL
 * file (one row per line; the format is {@link AuditRow}). Works as the
 * runtime's `auditSink`.
 *
 * - `emit` resolves only once the row is written and fsync'ed.
 * - Concurrent emits are written one at a time, in call order: bytes never
 *   interleave and the chain never forks.
 * - A failed write rejects that emit and is rolled back (the file is
 *   truncated to its previous length), so later emits continue the chain.
 * - Opening an existing log continues it: its last row gives the next `seq`
 *   and `prev`. A log that ends in a torn line (left by a crash) is refused
 *   until `repairAuditLog(path)` has removed it, and a log whose last row is
 *   damaged is refused outright.
 *
 * Whoever creates the sink closes it; the runtime never does.
 *
 * @example
 * ```ts
 * import { JsonlAuditSink, verifySuspension } from "civitas-ts/audit";
 *
 * const audit = new JsonlAuditSink("./audit.jsonl", { key: process.env.AUDIT_KEY!, keyId: "2030-01" });
 * const runtime = new Runtime({ root, auditSink: audit });
 * // ...
 * await runtime.stop();
 * await audit.close();
 * ```
 * @throws `AUDIT_KEY_MISSING` when no key is given and `CIVITAS_AUDIT_KEY` is unset or empty;
 *   `AUDIT_CORRUPT` when the existing log ends in a torn or damaged row;
 *   `AUDIT_UNREADABLE` ({@link AuditUnreadableError}) when the path is a directory or the
 *   file (or its directory) cannot be read or created, the file-system error as `cause`;
 *   `INVALID_ARGUMENT` for an empty path or keyId.
 */
export class JsonlAuditSink implements AuditSink {
  /** The log file. */
  readonly path: string;

  readonly #key: Uint8Array;
  readonly #keyId: string;
  /** Settles once the last emit that bears on a decision (audit-event.ts) asked for so far is written or failed. */
  #decisionsWritten: Promise<void> = Promise.resolve();
  /** The decisions on record, read from the file as it grows (made on the first lookup). */
  #settlements: JsonlSettlements | undefined;
  readonly #signerId: string | undefined;
  #size: number;
  #seq: number;
  #prev: string;
  #handle: Promise<FileHandle> | undefined;
  #queue: Promise<void> = Promise.resolve();
  #closing: Promise<void> | undefined;
  /** Set when a failed write could not be rolled back: the file's end is unknown, so nothing more is appended. */
  #broken: Error | undefined;

  constructor(path: string, options: JsonlAuditSinkOptions = {}) {
    if (typeof path !== "string" || path.length === 0) {
      throw new InvalidArgumentError("path", `JsonlAuditSink needs a non-empty file path, got ${JSON.stringify(path)}`);
    }
    const key = keyBytes(options.key) ?? (options.key === undefined ? keyBytes(process.env.CIVITAS_AUDIT_KEY) : undefined);
    if (key === undefined) throw new AuditKeyMissingError(path);
    const keyId = options.keyId ?? "default";
    if (typeof keyId !== "string" || keyId.length === 0) {
      throw new InvalidArgumentError("keyId", `JsonlAuditSink keyId must be a non-empty string, got ${JSON.stringify(keyId)}`);
    }
    const signerId: unknown = options.signerId;
    if (signerId !== undefined && (typeof signerId !== "string" || signerId.length === 0)) {
      throw new InvalidArgumentError("signerId", `JsonlAuditSink signerId must be a non-empty string naming who signs the rows, or left out, got ${describeValue(signerId)}`);
    }
    this.path = path;
    this.#key = key;
    this.#keyId = keyId;
    this.#signerId = signerId;
    let end: LogEnd;
    try {
      mkdirSync(dirname(path), { recursive: true });
      end = readLogEnd(path, keyId, key);
    } catch (error) {
      if (error instanceof AuditCorruptError) throw error;
      throw new AuditUnreadableError(path, "open", error);
    }
    this.#size = end.size;
    this.#seq = end.seq;
    this.#prev = end.prev;
  }

  /**
   * Appends `event` as the next row and resolves, with the row's
   * {@link AuditAnchor} (`seq`, `hash`), once it is on disk (fsync'ed).
   * @throws (rejects) `AUDIT_SINK_CLOSED` after `close()`; `INVALID_ARGUMENT`
   *   when `details` is not plain JSON; `AUDIT_UNREADABLE` when the file cannot
   *   be opened for appending; the I/O error when the write or fsync
   *   fails (the row is then not in the log, and the chain stays intact).
   */
  emit(event: AuditEvent): Promise<AuditAnchor> {
    if (this.#closing !== undefined) return Promise.reject(new AuditSinkClosedError(this.path));
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
   * The decision on record in the log for the pause `suspensionId` of
   * `agent`, once the emits already asked for that bear on decisions are written (see
   * {@link AuditSink.recordedSettlement}). Only rows whose chain verifies up
   * to them are read, and each once: a lookup reads only what was appended
   * since the previous one.
   * @throws (rejects) `AUDIT_UNREADABLE` when the file cannot be read.
   */
  async recordedSettlement(agent: string, suspensionId: string): Promise<AuditEvent | undefined> {
    // Only a queued row that can bear on a decision must be written first (a start's receipt need not be).
    await this.#decisionsWritten;
    this.#settlements ??= new JsonlSettlements(this.path, this.#keyId, this.#key);
    return this.#settlements.lookup(agent, suspensionId, this.#size);
  }

  /** Waits for pending emits, then closes the file. Idempotent: later calls return the first one's promise. */
  close(): Promise<void> {
    this.#closing ??= this.#queue.then(async () => {
      const handle = this.#handle;
      this.#handle = undefined;
      if (handle !== undefined) await (await handle).close();
    });
    return this.#closing;
  }

  async #append(event: AuditEvent): Promise<AuditAnchor> {
    if (this.#broken !== undefined) throw this.#broken;
    const row = signRow(
      {
        seq: this.#seq,
        ts: event.ts,
        event: event.event,
        agent: event.agent,
        signerId: this.#signerId ?? event.signerId,
        keyId: this.#keyId,
        details: event.details,
        prev: this.#prev,
      },
      this.#key,
    );
    const bytes = encodeRow(row);
    this.#handle ??= openForAppend(this.path);
    let handle: FileHandle;
    try {
      handle = await this.#handle;
    } catch (error) {
      this.#handle = undefined; // try again on the next emit
      throw new AuditUnreadableError(this.path, "open for appending", error);
    }
    // Another writer (a second sink, another process) may have appended since: writing at our offset would
    // overwrite its acknowledged rows, and the chain would still verify. Refuse instead.
    const { size } = await handle.stat();
    if (size !== this.#size) {
      throw new AuditCorruptError(
        this.path,
        `the audit log '${this.path}' is ${size} bytes, not the ${this.#size} this sink wrote: another writer appended to it. A log takes one writer; nothing was written. Open one JsonlAuditSink per file (one per process), then verifyAuditLog('${this.path}')`,
      );
    }
    try {
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, this.#size + written);
        written += bytesWritten;
      }
      await handle.sync();
    } catch (error) {
      try {
        await handle.truncate(this.#size);
        await handle.sync();
      } catch (rollback) {
        this.#broken = new AuditCorruptError(
          this.path,
          `a failed append to the audit log '${this.path}' could not be rolled back, so this sink appends nothing more; run repairAuditLog('${this.path}') and open a new sink`,
          { index: this.#seq },
          { cause: rollback },
        );
      }
      throw error;
    }
    // The only writer: a lookup index caught up to the end takes the row in without reading it back.
    this.#settlements?.appended(row, this.#size, bytes.length);
    this.#size += bytes.length;
    this.#seq += 1;
    this.#prev = row.hash;
    return { seq: row.seq, hash: row.hash };
  }
}

async function openForAppend(path: string): Promise<FileHandle> {
  // "a" creates the file without truncating it; writes then go to explicit offsets through "r+".
  await (await open(path, "a")).close();
  return open(path, "r+");
}

/** Reads just enough of the end of `path` to find its last row (synchronously: the constructor needs it). */
function readLogEnd(path: string, keyId: string, key: Uint8Array): LogEnd {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { size: 0, seq: 0, prev: GENESIS_PREV };
    throw error;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return { size: 0, seq: 0, prev: GENESIS_PREV };
    // Read backwards until the chunk holds the start of the last line.
    let chunk = Buffer.alloc(0);
    let from = size;
    let lastLineStart = -1;
    while (from > 0) {
      const length = Math.min(TAIL_CHUNK, from);
      from -= length;
      const piece = Buffer.alloc(length);
      readSync(fd, piece, 0, length, from);
      chunk = Buffer.concat([piece, chunk]);
      const before = chunk.length < 2 ? -1 : chunk.lastIndexOf(0x0a, chunk.length - 2);
      if (before !== -1) {
        lastLineStart = from + before + 1;
        break;
      }
    }
    if (lastLineStart === -1) lastLineStart = 0;
    const last = chunk.subarray(lastLineStart - from);
    if (last[last.length - 1] !== 0x0a) {
      const torn = isTornRow(last);
      throw new AuditCorruptError(
        path,
        torn
          ? `the audit log '${path}' ends in a torn line (a row cut short by a crash, ${last.length} bytes); appending after it would damage the log, so run repairAuditLog('${path}') (or \`civitas audit repair\`) first`
          : `the audit log '${path}' ends in ${last.length} bytes that are not a row; it is damaged, inspect it with verifyAuditLog before writing to it`,
        { tornTail: torn },
      );
    }
    const row = parseRowLine(last.subarray(0, -1));
    const refuse = (why: string): never => {
      throw new AuditCorruptError(path, `the last row of the audit log '${path}' ${why}; refusing to append to it, inspect it with verifyAuditLog`);
    };
    if (isParseFailure(row)) return refuse(`is damaged (${row.message})`);
    if (hashRow(row) !== row.hash) return refuse("does not match its hash");
    if (row.keyId === keyId && !macEquals(macOf(row.hash, key), row.mac)) {
      throw new AuditCorruptError(
        path,
        `the last row of the audit log '${path}' was signed under keyId '${keyId}' with a different key than the one given; pass the right key, or a new keyId when rotating keys`,
      );
    }
    return { size, seq: row.seq + 1, prev: row.hash };
  } finally {
    closeSync(fd);
  }
}
