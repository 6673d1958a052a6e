import type { AuditEvent } from "./audit-event.js";
import { GENESIS_PREV, hashRow, macEquals, macOf, type AuditRow } from "./audit-row.js";
import { PauseDecisions } from "./owner-fence.js";

/**
 * The decisions on record in a chained log, taken in once, row by row, as
 * the log grows: a reading sink answers `recordedSettlement` from it after
 * reading only the rows appended since its last answer, so a runtime
 * restoring many parked agents reads its log once, not once per pause.
 *
 * A row counts only in chain order (its `seq` and `prev` follow the last
 * one taken in) and when it matches its hash; one signed under the sink's
 * own `keyId` also needs the HMAC of its hash under `key` (a decision must
 * not be taken from a row nobody with the key wrote). The index stops at
 * the first row that breaks the chain: nothing after it is a decision. The
 * decision of a pause follows the rules of {@link PauseDecisions}
 * (owner-fence.ts): a fenced-out owner's settlement is none, and an
 * `agent.settlement.refused` sets the decision it names aside.
 * @internal
 */
export class SettlementIndex {
  readonly #keyId: string;
  readonly #key: Uint8Array;
  readonly #decisions = new PauseDecisions<AuditRow>();
  #prev = GENESIS_PREV;
  #next = 0;
  #broken = false;

  constructor(keyId: string, key: Uint8Array) {
    this.#keyId = keyId;
    this.#key = key;
  }

  /** The `seq` of the next row to take in. */
  get nextSeq(): number {
    return this.#next;
  }

  /** Takes in `row`, the next of the chain; `false` (and nothing more is taken in) once the chain is broken. */
  take(row: AuditRow): boolean {
    if (this.#broken || row.seq !== this.#next || row.prev !== this.#prev || hashRow(row) !== row.hash) {
      this.#broken = true;
      return false;
    }
    this.#next++;
    this.#prev = row.hash;
    if (row.keyId === this.#keyId && !macEquals(macOf(row.hash, this.#key), row.mac)) return true;
    this.#decisions.see(row);
    return true;
  }

  /** The decision on record for the pause `suspensionId` of `agent`, as an event; `undefined` when none. */
  decision(agent: string, suspensionId: string): AuditEvent | undefined {
    const row = this.#decisions.decision(agent, suspensionId);
    return row === undefined ? undefined : { event: row.event, ts: row.ts, agent: row.agent, signerId: row.signerId, details: row.details };
  }
}
