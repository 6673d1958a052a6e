import { describeValue } from "../errors/civitas-error.js";
import { StateSchemaError } from "../errors/errors.js";
import { copyJson, type JsonObject, type JsonValue } from "../message/json.js";
import type { ApprovalRecord, HeldWire } from "./approval-request.js";
import { checkApprovalRule } from "./approval-rule.js";
import type { ApprovalStatus, ApprovalVote } from "./approval-types.js";
import { checkPendingReceipts, type PendingReceipt } from "./pending-receipts.js";

/**
 * The key under which an agent's approval requests (its held actions) live
 * inside its checkpointed `state`, written in the same atomic `store.set` as
 * the rest of it. The runtime owns the key, as it owns the suspension marker:
 * every persist writes the runtime's own records there, whatever user code
 * put under it, and the agent's `state` does not show it.
 */
export const APPROVALS_KEY = "_civitas.approvals";

const STATUSES: ReadonlySet<string> = new Set<ApprovalStatus>(["pending", "approved", "denied", "expired", "cancelled"]);
const HEX64 = /^[0-9a-f]{64}$/;

/** Deeply frozen: a held message, a rule, a vote must not change once recorded. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** A frozen private copy of a held message's wire form. @internal */
export function frozenWire(wire: object): HeldWire {
  return deepFreeze(copyJson(wire as JsonObject)) as unknown as HeldWire;
}

/**
 * The records as stored under {@link APPROVALS_KEY}: plain JSON, a fresh
 * copy. A record whose receipts are not appended yet carries them under
 * `receipts` (written ahead, in the same write as the change they record).
 * @internal
 */
export function approvalsJson(records: Iterable<ApprovalRecord>, receipts?: ReadonlyMap<string, readonly PendingReceipt[]>): JsonValue {
  const list: JsonValue[] = [];
  for (const record of records) {
    const json = copyJson(record as unknown as JsonObject);
    const pending = receipts?.get(record.approvalId);
    if (pending !== undefined && pending.length > 0) json.receipts = pending.map((receipt) => copyJson(receipt as unknown as JsonObject));
    list.push(json);
  }
  return list;
}

/**
 * The receipts stored ahead with each record of `state` (see
 * {@link approvalsJson}), by approval id, each checked against its record:
 * a receipt that does not describe its record's stored change is dropped,
 * and named in `dropped` (the store is not trusted to make the runtime sign
 * anything its records do not say).
 * @throws {@link StateSchemaError} when the key holds anything but well-formed records
 * @internal
 */
export function readStoredReceipts(agent: string, state: JsonObject): { receipts: Map<string, PendingReceipt[]>; dropped: string[] } {
  const receipts = new Map<string, PendingReceipt[]>();
  const dropped: string[] = [];
  const records = readStoredApprovals(agent, state);
  const stored = state[APPROVALS_KEY] as JsonObject[];
  records.forEach((record, i) => {
    const checked = checkPendingReceipts(record, stored[i]?.receipts);
    if (checked.kept.length > 0) receipts.set(record.approvalId, checked.kept);
    dropped.push(...checked.dropped);
  });
  return { receipts, dropped };
}

/**
 * Reads and checks the records stored in `state` (none when the key is
 * absent): frozen records, as the runtime keeps them.
 * @throws {@link StateSchemaError} when the key holds anything but well-formed records
 * @internal
 */
export function readStoredApprovals(agent: string, state: JsonObject): ApprovalRecord[] {
  const value = state[APPROVALS_KEY];
  if (value === undefined) return [];
  const bad = (problem: string): never => {
    throw new StateSchemaError(agent, `stored state of '${agent}' has malformed approval requests under '${APPROVALS_KEY}' (${problem}); restore the record from a backup rather than guess which actions were held`);
  };
  if (!Array.isArray(value)) return bad(`not a list: ${describeValue(value)}`);
  const seen = new Set<string>();
  return value.map((item, i) => {
    const r = item as Record<string, unknown> | null;
    if (typeof r !== "object" || r === null || Array.isArray(r)) return bad(`entry ${i} is ${describeValue(item)}`);
    const text = (key: string): string => (typeof r[key] === "string" ? (r[key]) : bad(`entry ${i} has ${key} ${describeValue(r[key])}`));
    const approvalId = text("approvalId");
    if (seen.has(approvalId)) bad(`approval ${approvalId} is stored twice`);
    seen.add(approvalId);
    if (text("agent") !== agent) bad(`approval ${approvalId} names another agent, ${describeValue(r.agent)}`);
    if (!STATUSES.has(text("status"))) bad(`approval ${approvalId} has status ${describeValue(r.status)}`);
    if (!HEX64.test(text("digest"))) bad(`approval ${approvalId} has digest ${describeValue(r.digest)}`);
    text("reason");
    text("requestedAt");
    if (typeof r.consumed !== "boolean" || typeof r.escalated !== "boolean") bad(`approval ${approvalId} lacks consumed/escalated flags`);
    if (typeof r.stage !== "number" || !Number.isInteger(r.stage) || r.stage < 0) bad(`approval ${approvalId} has stage ${describeValue(r.stage)}`);
    const wire = r.wire as Record<string, unknown> | null;
    if (typeof wire !== "object" || wire === null || typeof wire.id !== "string" || typeof wire.type !== "string" || typeof wire.sender !== "string" || typeof wire.payload !== "object" || wire.payload === null) {
      bad(`approval ${approvalId} holds no well-formed message`);
    }
    if (!Array.isArray(r.votes) || !(r.votes as unknown[]).every(isVote)) bad(`approval ${approvalId} has malformed votes`);
    try {
      checkApprovalRule(`approval ${approvalId}`, r.rule);
    } catch (error) {
      bad(`approval ${approvalId} has a malformed rule: ${(error as Error).message}`);
    }
    for (const key of ["expiresAt", "escalateAt", "decidedAt", "decidedBy", "decisionReason"]) {
      if (r[key] !== undefined && typeof r[key] !== "string") bad(`approval ${approvalId} has ${key} ${describeValue(r[key])}`);
    }
    // The receipts written ahead with the record are read by readStoredReceipts, not kept on the record.
    const { receipts: _receipts, ...fields } = item as JsonObject;
    return deepFreeze(copyJson(fields)) as unknown as ApprovalRecord;
  });
}

function isVote(value: unknown): value is ApprovalVote {
  const v = value as Record<string, unknown> | null;
  return typeof v === "object" && v !== null && typeof v.approver === "string" && (v.vote === "approve" || v.vote === "deny") && typeof v.stage === "number" && typeof v.at === "string";
}
