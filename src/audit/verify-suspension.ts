import type { StateStore } from "../state/state-store.js";
import { crossCheckAnchor } from "./anchor-check.js";
import { SETTLEMENT_REFUSED, refuses } from "./audit-event.js";
import type { AuditRow } from "./audit-row.js";
import { OwnerFences, writerFence } from "./owner-fence.js";
import { auditLogBytes, sourceLabel, type AuditLogSource } from "./audit-source.js";
import { keyResolver, walkAuditLog, type VerifyOptions } from "./verify-audit-log.js";

/**
 * `verified`: settled by exactly one decision naming it (a resume, a deny,
 * an expiry or a cancellation). `pending`: not settled yet (a live
 * suspension, never a failure). `failed`: a real break.
 */
export type SuspensionStatus = "verified" | "pending" | "failed";

/**
 * How a suspension was settled: `approved` (an `agent.resume`), `denied` (an
 * `agent.deny`), `expired` (an `agent.deny` with `expired: true`, decider
 * `"expiry"`) or `cancelled` (an `agent.suspend.cancelled`: a halt or a
 * permanent removal).
 */
export type SuspensionDecision = "approved" | "denied" | "expired" | "cancelled";

/** The audit events that settle a suspension, and the decision each records. */
const SETTLING_EVENTS: ReadonlySet<string> = new Set(["agent.resume", "agent.deny", "agent.suspend.cancelled"]);

/** One suspension of an agent, as the audit log records it. */
export interface SuspensionRecord {
  /** The id the `agent.suspend` row gave it. */
  suspensionId: string;
  /** Why the agent was suspended. */
  reason: string;
  /** When it was suspended (the row's `details.since`, else its `ts`). */
  since: string;
  /** Its status. */
  status: SuspensionStatus;
  /** How it was settled (the first settlement, when there were more); absent while pending. */
  decision?: SuspensionDecision;
  /** Who settled it: the approver, the decider (`"expiry"` for an expiry), or who cancelled it (`by`). */
  decidedBy?: string;
  /** When it was settled (the settling row's `ts`). */
  settledAt?: string;
  /** Why it was cancelled (`halt`, `despawned`, `stopped`, `restarts_exhausted`, `clean_exit`), for a cancellation. */
  cause?: string;
  /** Who approved the resume that settled it (an approval only). */
  approver?: string;
  /** When that resume was recorded (its row's `ts`; an approval only). */
  resumedAt?: string;
}

/** Options of {@link verifySuspension}: the keys, and the state store to cross-check the log against. */
export interface VerifySuspensionOptions extends VerifyOptions {
  /**
   * The state store the agent's runtime wrote to. Its stored state records
   * the audit anchor (`seq`, `hash`) of the agent's last pause or
   * settlement; a log that ends before it was cut (`reason: "truncated"`),
   * one whose row there has another hash was replaced (`"anchor-mismatch"`).
   */
  store?: Pick<StateStore, "get">;
}

/** The outcome of {@link verifySuspension}. */
export interface SuspensionVerification {
  /** Why the verification failed as a whole when the log disagrees with the store: `truncated` or `anchor-mismatch`. */
  reason?: "truncated" | "anchor-mismatch";
  /**
   * `failed` if any suspension failed or the chain is broken, else `pending`
   * if any is unsettled, else `verified` — or `not-found` when no verified
   * row of the log is of `agent` at all (a misspelt name, or another
   * agent's log): nothing was verified. `civitas audit verify-suspension`
   * exits 4 (not found) for it.
   */
  status: SuspensionStatus | "not-found";
  /** Every suspension of the agent, oldest first. */
  suspensions: SuspensionRecord[];
  /** One sentence per break found. */
  failures: string[];
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * Answers offline, from the log alone, whether each suspension of `agent` was
 * settled by exactly one decision naming its `suspensionId`: an
 * `agent.resume` (`approved`), an `agent.deny` (`denied`, or `expired` when
 * its deadline passed) or an `agent.suspend.cancelled` (`cancelled`).
 *
 * The same suspension announced again before its resume (an `agent.suspend`
 * of `agent` repeating a pending `suspensionId`: a restart re-announced a
 * pause whose first announcement a kill had cut short) counts once. A
 * decision its owner refused to carry out (`agent.settlement.refused`: the
 * owner's `authorizeResume` said no to the recorded approver after a
 * restart or a takeover) is set aside: the next settlement is the decision.
 * A suspension fails when it is settled twice (two resumes, a deny after a
 * resume, a cancellation after an expiry …), or when a settlement of another
 * agent names it; the verification also fails for a settlement of `agent`
 * naming a suspension the log does not hold (before it) or one of another
 * agent, for suspend or settling rows without a `suspensionId`, for a settlement
 * written by a fenced-out owner (its `details.fence` older than a fence the log
 * showed for `agent` before it: see docs/postgres.md), for a refusal
 * (`agent.settlement.refused`) naming no decision the log holds, and for a broken
 * chain (see `verifyAuditLog`; rows after the break are not read). A torn final
 * line is ignored.
 *
 * `path` may also be the log's bytes or its rows (`await postgresAuditSink.rows()`).
 * With `store`, the log is cross-checked against the audit anchor stored with
 * the agent's state: a log that ends before it is `failed`, reason `truncated`.
 *
 * @example
 * ```ts
 * const { status, suspensions } = await verifySuspension("./audit.jsonl", "payer", { key });
 * if (status === "failed") process.exitCode = 1;
 * ```
 * @throws (rejects) `AUDIT_UNREADABLE` when the file cannot be read (the file-system error is
 *   the `cause`), or `AUDIT_KEY_MISSING` when no key is given.
 */
export async function verifySuspension(path: AuditLogSource, agent: string, options: VerifySuspensionOptions): Promise<SuspensionVerification> {
  const keyFor = keyResolver(sourceLabel(path), options);
  const walk = walkAuditLog(await auditLogBytes(path), keyFor);
  const failures: string[] = [];
  const suspensions = settle(walk.rows, agent, failures);
  if (walk.brokenAt !== undefined) failures.push(`the audit chain is broken at row ${walk.brokenAt}: ${walk.reason ?? "unknown"}`);
  const anchor = options.store === undefined ? undefined : await crossCheckAnchor(walk.rows, agent, options.store);
  if (anchor !== undefined) failures.push(anchor.failure);
  let status: SuspensionVerification["status"] = "verified";
  if (failures.length > 0 || suspensions.some((s) => s.status === "failed")) status = "failed";
  else if (suspensions.some((s) => s.status === "pending")) status = "pending";
  else if (!walk.rows.some((row) => row.agent === agent)) status = "not-found";
  return anchor === undefined ? { status, suspensions, failures } : { status, suspensions, failures, reason: anchor.reason };
}

function settle(rows: readonly AuditRow[], agent: string, failures: string[]): SuspensionRecord[] {
  const mine = new Map<string, SuspensionRecord & { settledBy?: AuditRow }>();
  /** suspensionId → owning agent, for every suspension seen so far. */
  const owners = new Map<string, string>();
  const fences = new OwnerFences();
  for (const row of rows) {
    const newerOwner = fences.fencedOut(row);
    fences.see(row);
    if (row.event === "agent.suspend") {
      const id = text(row.details.suspensionId);
      if (row.agent !== agent) {
        if (id !== undefined) owners.set(id, row.agent);
        continue;
      }
      if (id === undefined) {
        failures.push(`row ${row.seq}: agent.suspend of '${agent}' names no suspensionId`);
        continue;
      }
      const announced = mine.get(id);
      if (announced !== undefined && announced.settledAt === undefined) {
        // The same pause announced again: a kill came after its receipt and before the write recording that, and the restart re-announced it.
        continue;
      }
      if (owners.has(id)) {
        failures.push(`row ${row.seq}: suspension '${id}' of '${agent}' reuses an id already recorded for '${owners.get(id) ?? ""}'`);
        const earlier = mine.get(id);
        if (earlier !== undefined) earlier.status = "failed";
        continue;
      }
      owners.set(id, agent);
      mine.set(id, {
        suspensionId: id,
        reason: text(row.details.reason) ?? "",
        since: text(row.details.since) ?? row.ts,
        status: "pending",
      });
    } else if (row.event === SETTLEMENT_REFUSED && row.agent === agent) {
      setAside(row, mine.get(text(row.details.suspensionId) ?? ""), newerOwner, failures);
    } else if (SETTLING_EVENTS.has(row.event)) {
      const id = text(row.details.suspensionId);
      if (row.agent !== agent) {
        if (id !== undefined && mine.has(id)) {
          const record = mine.get(id);
          if (record !== undefined) record.status = "failed";
          failures.push(`row ${row.seq}: ${what(row.event)} of '${row.agent}' names suspension '${id}' of '${agent}'`);
        }
        continue;
      }
      if (id === undefined) {
        failures.push(`row ${row.seq}: ${row.event} of '${agent}' names no suspensionId`);
        continue;
      }
      const record = mine.get(id);
      if (newerOwner !== undefined) {
        // Written by an owner fenced out by then: it never took effect, and is not the pause's decision.
        if (record !== undefined) record.status = "failed";
        failures.push(
          `row ${row.seq}: ${what(row.event)} of suspension '${id}' of '${agent}' was written at fence ${writerFence(row) ?? "?"} after fence ${newerOwner} took '${agent}' over; a fenced-out owner's receipt is not a decision`,
        );
        continue;
      }
      if (record === undefined) {
        const owner = owners.get(id);
        failures.push(
          owner === undefined
            ? `row ${row.seq}: ${what(row.event)} of '${agent}' names suspension '${id}', which the log does not hold before it`
            : `row ${row.seq}: ${what(row.event)} of '${agent}' names suspension '${id}' of another agent, '${owner}'`,
        );
        continue;
      }
      if (record.settledAt !== undefined) {
        record.status = "failed";
        failures.push(`row ${row.seq}: suspension '${id}' of '${agent}' is settled a second time (${what(row.event)} after it was ${record.decision ?? "settled"})`);
        continue;
      }
      if (record.status === "pending") record.status = "verified";
      record.settledAt = row.ts;
      record.settledBy = row;
      if (row.event === "agent.resume") {
        record.decision = "approved";
        const approver = text(row.details.approver);
        if (approver !== undefined) {
          record.approver = approver;
          record.decidedBy = approver;
        }
        record.resumedAt = row.ts;
      } else if (row.event === "agent.deny") {
        record.decision = row.details.expired === true ? "expired" : "denied";
        const decider = text(row.details.decider);
        if (decider !== undefined) record.decidedBy = decider;
      } else {
        record.decision = "cancelled";
        const by = text(row.details.by);
        if (by !== undefined) record.decidedBy = by;
        const cause = text(row.details.cause);
        if (cause !== undefined) record.cause = cause;
      }
    }
  }
  return [...mine.values()].map(({ settledBy: _settledBy, ...record }) => record);
}

/**
 * An owner's `agent.settlement.refused`: its `authorizeResume` would not
 * carry out the decision on record, which is set aside (the pause is pending
 * again, and its next settlement is its decision). A refusal written by a
 * fenced-out owner, or one naming no settlement of the pause, is a failure.
 */
function setAside(row: AuditRow, record: (SuspensionRecord & { settledBy?: AuditRow }) | undefined, newerOwner: number | undefined, failures: string[]): void {
  const id = text(row.details.suspensionId) ?? "";
  if (newerOwner !== undefined) {
    failures.push(`row ${row.seq}: a refusal to carry out the decision of suspension '${id}' of '${row.agent}' was written at fence ${writerFence(row) ?? "?"} after fence ${newerOwner} took '${row.agent}' over`);
    return;
  }
  const settled = record?.settledBy;
  if (record === undefined || settled === undefined || !refuses(row, settled)) {
    if (record !== undefined) record.status = "failed";
    failures.push(`row ${row.seq}: a refusal names a decision of suspension '${id}' of '${row.agent}' that the log does not hold before it`);
    return;
  }
  if (record.status === "verified") record.status = "pending";
  for (const key of ["decision", "decidedBy", "settledAt", "settledBy", "cause", "approver", "resumedAt"] as const) delete record[key];
}

/** A settling row in words: "a resume", "a deny", "a cancellation". */
function what(event: string): string {
  return event === "agent.resume" ? "a resume" : event === "agent.deny" ? "a deny" : "a cancellation";
}
