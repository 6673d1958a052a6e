import { CivitasError } from "../errors/civitas-error.js";

/**
 * A held message was denied (by a policy, an approver, or its expiry) or its
 * request cancelled (its agent removed for good): the asker waiting for it
 * is rejected with this (`outcome` tells which); nothing was handled.
 */
export class ApprovalDeniedError extends CivitasError {
  /** The agent that held the message. */
  readonly agent: string;
  /** The request, when one was made (a policy's deny makes none). */
  readonly approvalId: string | undefined;
  /** Who decided: the denying approver, `"expiry"`, or `"policy"`. */
  readonly decider: string;
  /** Why. */
  readonly reason: string;
  /** How the request ended: `denied` (by a policy or an approver), `expired`, or `cancelled` (its agent removed for good, or its held message changed). */
  readonly outcome: "denied" | "expired" | "cancelled";
  constructor(agent: string, approvalId: string | undefined, decider: string, reason: string, outcome?: "denied" | "expired" | "cancelled") {
    const ended = outcome ?? (decider === "expiry" ? "expired" : "denied");
    const how = ended === "expired" ? "not given in time (expired)" : ended === "cancelled" ? `cancelled by '${decider}'` : `denied by '${decider}'`;
    const what = approvalId === undefined ? `the policy of '${agent}' denied the message` : `approval ${approvalId} of '${agent}' was ${how}`;
    super("APPROVAL_DENIED", `${what}${reason === "" ? "" : `: ${reason}`}; the message was not handled — change the request, or ask for approval again`);
    this.agent = agent;
    this.approvalId = approvalId;
    this.decider = decider;
    this.reason = reason;
    this.outcome = ended;
  }
}

/** No request with that id is known to this runtime. */
export class ApprovalNotFoundError extends CivitasError {
  /** The id that was looked up. */
  readonly approvalId: string;
  constructor(approvalId: string) {
    super("APPROVAL_NOT_FOUND", `no approval request ${JSON.stringify(approvalId)} is known to this runtime; list them with runtime.approvals.list() and pass the exact approvalId`);
    this.approvalId = approvalId;
  }
}

/** The approver is not accepted by the request's current stage (the refusal is recorded). */
export class ApproverNotAllowedError extends CivitasError {
  readonly approvalId: string;
  readonly approver: string;
  /** The index of the current stage. */
  readonly stage: number;
  constructor(approvalId: string, approver: string, stage: number, accepted: readonly string[]) {
    super("APPROVER_NOT_ALLOWED", `'${approver}' may not vote on approval ${approvalId} in its stage ${stage}; that stage accepts ${accepted.map((a) => `'${a}'`).join(", ")} — ask one of them`);
    this.approvalId = approvalId;
    this.approver = approver;
    this.stage = stage;
  }
}

/** A vote on a request that is no longer pending (decided, expired, cancelled). */
export class StaleVoteError extends CivitasError {
  readonly approvalId: string;
  constructor(approvalId: string, status: string) {
    super("STALE_APPROVAL", `approval ${approvalId} is ${status}, no longer pending; a vote counts only while the request is pending — look at it with runtime.approvals.get()`);
    this.approvalId = approvalId;
  }
}

/** A held message no longer matches the digest it was approved under: it is not released. */
export class ApprovalDigestMismatchError extends CivitasError {
  readonly approvalId: string;
  constructor(approvalId: string, expected: string, actual: string) {
    super("APPROVAL_DIGEST_MISMATCH", `the message held by approval ${approvalId} no longer matches its digest (${expected.slice(0, 12)}…, now ${actual.slice(0, 12)}…); it was changed after the request and is not released — ask for a new approval`);
    this.approvalId = approvalId;
  }
}

/** A policy threw, rejected, or answered something malformed: the message was denied (fail closed). */
export class PolicyFailedError extends CivitasError {
  readonly agent: string;
  constructor(agent: string, problem: string, options?: ErrorOptions) {
    super("POLICY_FAILED", `the approval policy of '${agent}' failed (${problem}); the message is denied — fix the policy so it answers { decision: "allow" | "deny" | "require_approval" }`, options);
    this.agent = agent;
  }
}
