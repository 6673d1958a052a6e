import { open } from "node:fs/promises";
import type { AuditEvent } from "./audit-event.js";
import { AuditUnreadableError } from "./audit-errors.js";
import { isParseFailure, parseRowLine, type AuditRow } from "./audit-row.js";
import { SettlementIndex } from "./settlement-index.js";

const CHUNK_BYTES = 1 << 20;

/**
 * The decisions on record in a JSONL log, for `JsonlAuditSink.recordedSettlement`:
 * each lookup reads only the bytes written since the previous one (into a
 * {@link SettlementIndex}), one lookup at a time; a row the sink appends
 * while the index is caught up is taken in as it is written (a log has one
 * writer), so a lookup after it reads nothing. @internal
 */
export class JsonlSettlements {
  readonly #path: string;
  readonly #index: SettlementIndex;
  /** Where the first line not taken in yet begins. */
  #offset = 0;
  /** A lookup is reading the file: rows appended meanwhile are left for the next read. */
  #reading = false;
  #lookups: Promise<void> = Promise.resolve();

  constructor(path: string, keyId: string, key: Uint8Array) {
    this.#path = path;
    this.#index = new SettlementIndex(keyId, key);
  }

  /**
   * The decision on record for the pause `suspensionId` of `agent`, the
   * log being `size` bytes long (what its writer wrote).
   * @throws (rejects) `AUDIT_UNREADABLE` when the file cannot be read.
   */
  async lookup(agent: string, suspensionId: string, size: number): Promise<AuditEvent | undefined> {
    const caughtUp = this.#lookups.then(() => (this.#offset < size ? this.#read() : undefined));
    this.#lookups = caughtUp.catch(() => undefined);
    await caughtUp;
    return this.#index.decision(agent, suspensionId);
  }

  /**
   * The sink appended `row` (`length` bytes) at byte `at`: taken in at once
   * when everything before it has been and no read is under way, else left
   * for the next lookup's read.
   */
  appended(row: AuditRow, at: number, length: number): void {
    if (this.#reading || at !== this.#offset) return;
    if (this.#index.take(row)) this.#offset += length;
  }

  async #read(): Promise<void> {
    this.#reading = true;
    let handle;
    try {
      handle = await open(this.#path, "r");
    } catch (error) {
      this.#reading = false;
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return; // nothing recorded yet
      throw new AuditUnreadableError(this.#path, "open", error);
    }
    try {
      await this.#readFrom(handle);
    } catch (error) {
      throw new AuditUnreadableError(this.#path, "read", error);
    } finally {
      this.#reading = false;
      await handle.close();
    }
  }

  async #readFrom(handle: Awaited<ReturnType<typeof open>>): Promise<void> {
    const size = (await handle.stat()).size;
    let carry = Buffer.alloc(0);
    let position = this.#offset;
    while (position < size) {
      const chunk = Buffer.alloc(Math.min(CHUNK_BYTES, size - position));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      const bytes = carry.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
      let start = 0;
      for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, start)) {
        const row = parseRowLine(bytes.subarray(start, nl));
        // A line that is not a row breaks the chain: nothing after it is taken in.
        if (isParseFailure(row) || !this.#index.take(row)) return;
        this.#offset += nl + 1 - start;
        start = nl + 1;
      }
      carry = Buffer.from(bytes.subarray(start)); // a line still being written, or torn by a crash
    }
  }
}
