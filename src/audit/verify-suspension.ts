import type { StateStore } from "../state/state-store.js";
import { crossCheckAnchor } from "./anchor-check.js";
import type { AuditRow } from "./audit-row.js";
import { auditLogBytes, sourceLabel, type AuditLogSource } from "./audit-source.js";
import { keyResolver, walkAuditLog, type VerifyOptions } from "./verify-audit-log.js";

/**
 * `verified`: settled by exactly one resume naming it. `pending`: not resumed
 * yet (a live suspension, never a failure). `failed`: a real break.
 */
export type SuspensionStatus = "verified" | "pending" | "failed";

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
  /** Who approved the resume that settled it. */
  approver?: string;
  /** When that resume was recorded (its row's `ts`). */
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
  /** `failed` if any suspension failed or the chain is broken, else `pending` if any is unsettled, else `verified`. */
  status: SuspensionStatus;
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
 * settled by exactly one `agent.resume` naming its `suspensionId`.
 *
 * The same suspension announced again before its resume (an `agent.suspend`
 * of `agent` repeating a pending `suspensionId`: a restart re-announced a
 * pause whose first announcement a kill had cut short) counts once.
 * A suspension fails when it is settled twice, or when a resume of another
 * agent names it; the verification also fails for a resume of `agent` naming a
 * suspension the log does not hold (before that resume) or one of another
 * agent, for suspend or resume rows without a `suspensionId`, and for a broken
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
 * @throws (rejects) when the file cannot be read, or `AUDIT_KEY_MISSING` when no key is given.
 */
export async function verifySuspension(path: AuditLogSource, agent: string, options: VerifySuspensionOptions): Promise<SuspensionVerification> {
  const keyFor = keyResolver(sourceLabel(path), options);
  const walk = walkAuditLog(await auditLogBytes(path), keyFor);
  const failures: string[] = [];
  const suspensions = settle(walk.rows, agent, failures);
  if (walk.brokenAt !== undefined) failures.push(`the audit chain is broken at row ${walk.brokenAt}: ${walk.reason ?? "unknown"}`);
  const anchor = options.store === undefined ? undefined : await crossCheckAnchor(walk.rows, agent, options.store);
  if (anchor !== undefined) failures.push(anchor.failure);
  let status: SuspensionStatus = "verified";
  if (failures.length > 0 || suspensions.some((s) => s.status === "failed")) status = "failed";
  else if (suspensions.some((s) => s.status === "pending")) status = "pending";
  return anchor === undefined ? { status, suspensions, failures } : { status, suspensions, failures, reason: anchor.reason };
}

function settle(rows: readonly AuditRow[], agent: string, failures: string[]): SuspensionRecord[] {
  const mine = new Map<string, SuspensionRecord>();
  /** suspensionId → owning agent, for every suspension seen so far. */
  const owners = new Map<string, string>();
  for (const row of rows) {
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
      if (announced !== undefined && announced.resumedAt === undefined) {
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
    } else if (row.event === "agent.resume") {
      const id = text(row.details.suspensionId);
      if (row.agent !== agent) {
        if (id !== undefined && mine.has(id)) {
          const record = mine.get(id);
          if (record !== undefined) record.status = "failed";
          failures.push(`row ${row.seq}: a resume of '${row.agent}' names suspension '${id}' of '${agent}'`);
        }
        continue;
      }
      if (id === undefined) {
        failures.push(`row ${row.seq}: agent.resume of '${agent}' names no suspensionId`);
        continue;
      }
      const record = mine.get(id);
      if (record === undefined) {
        const owner = owners.get(id);
        failures.push(
          owner === undefined
            ? `row ${row.seq}: a resume of '${agent}' names suspension '${id}', which the log does not hold before it`
            : `row ${row.seq}: a resume of '${agent}' names suspension '${id}' of another agent, '${owner}'`,
        );
        continue;
      }
      if (record.resumedAt !== undefined) {
        record.status = "failed";
        failures.push(`row ${row.seq}: suspension '${id}' of '${agent}' is settled a second time`);
        continue;
      }
      if (record.status === "pending") record.status = "verified";
      const approver = text(row.details.approver);
      if (approver !== undefined) record.approver = approver;
      record.resumedAt = row.ts;
    }
  }
  return [...mine.values()];
}
