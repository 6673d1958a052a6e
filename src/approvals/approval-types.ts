import type { Message } from "../message/message.js";

/** Where an approval request stands (SPEC §12.2). */
export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

/** One stage of an {@link ApprovalRule}: the approvers it accepts and how many distinct ones it needs. */
export interface ApprovalStage {
  /** Who may vote in this stage (approver names, as passed to `approve`/`deny`). */
  readonly approvers: readonly string[];
  /** How many distinct approvers of this stage must approve before the next stage begins. */
  readonly min: number;
  /** A name for the stage, shown to approvers. */
  readonly name?: string;
}

/**
 * Who must approve a held action (SPEC §12.3): ordered `stages`, each needing
 * `min` distinct approvers. Any deny ends the request; expiry denies; nothing
 * ever approves by timeout.
 * @example
 * ```ts
 * const rule: ApprovalRule = {
 *   stages: [{ name: "finance", approvers: ["ana", "ben", "cy"], min: 2 }],
 *   escalateAfterMs: 3_600_000, escalateTo: ["maya"],
 *   expiresInMs: 86_400_000,
 * };
 * ```
 */
export interface ApprovalRule {
  /** The stages, in order; at least one. */
  readonly stages: readonly ApprovalStage[];
  /** After this long still pending, {@link ApprovalRule.escalateTo} are added to the stage current then. */
  readonly escalateAfterMs?: number;
  /** The approvers added to the current stage at escalation. */
  readonly escalateTo?: readonly string[];
  /** After this long still pending, the request ends as `expired` (a denial by decider `"expiry"`). */
  readonly expiresInMs?: number;
}

/** One counted vote on a request. */
export interface ApprovalVote {
  readonly approver: string;
  readonly vote: "approve" | "deny";
  /** The index of the stage the vote was cast in. */
  readonly stage: number;
  /** When, ISO-8601 UTC with milliseconds. */
  readonly at: string;
  readonly reason?: string;
}

/** The held message as readers see it. */
export interface HeldMessageView {
  readonly id: string;
  readonly type: string;
  readonly sender: string;
  readonly payload: object;
  readonly correlationId?: string;
}

/** What every reader (runtime API, HTTP API, inbox page) sees of one request. */
export interface ApprovalView {
  /** UUIDv7, minted by the runtime. */
  readonly approvalId: string;
  /** The agent holding the action. */
  readonly agent: string;
  readonly status: ApprovalStatus;
  /** The released message was handed to the handler (once; never again). */
  readonly consumed: boolean;
  /** Lowercase hex SHA-256 of the RFC 8785 canonical JSON of `{ agent, type, payload }` (SPEC §12.1). */
  readonly digest: string;
  readonly message: HeldMessageView;
  readonly rule: ApprovalRule;
  /** Why approval is required. */
  readonly reason: string;
  /** Index of the current stage (`rule.stages.length` once approved). */
  readonly stage: number;
  readonly votes: readonly ApprovalVote[];
  /** ISO-8601 UTC with milliseconds. */
  readonly requestedAt: string;
  readonly expiresAt?: string;
  readonly escalateAt?: string;
  readonly escalated: boolean;
  readonly decidedAt?: string;
  /** The approver whose vote decided, the denier, `"expiry"`, or who cancelled. */
  readonly decidedBy?: string;
  readonly decisionReason?: string;
}

/** Options of `runtime.approvals.list`. */
export interface ApprovalListFilter {
  readonly status?: ApprovalStatus;
  readonly agent?: string;
  /** `"local"` (this runtime's agents, the default) or `"cluster"` (every agent with state in the store, read from the stored states: with a shared `PostgresStateStore`, the whole cluster's). */
  readonly scope?: "local" | "cluster";
}

/** What an {@link ApprovalPolicy} is asked about: the message about to reach `handle`. */
export interface PolicyAction {
  /** The agent the message is for. */
  readonly agent: string;
  /** The message (frozen or not, it must not be changed). */
  readonly message: Message;
}

/** A policy's answer: allow, deny with a reason, or require approval under a rule. */
export type PolicyDecision =
  | { readonly decision: "allow" }
  | { readonly decision: "deny"; readonly reason: string }
  | { readonly decision: "require_approval"; readonly rule: ApprovalRule; readonly reason: string };

/**
 * The policy gate, consulted before each business message reaches `handle`.
 * A throw, a rejection or a malformed answer denies the message (fail closed,
 * `POLICY_FAILED` in the log). Return constant objects for the common answer:
 * the gate runs on every message.
 * @example
 * ```ts
 * const ALLOW = { decision: "allow" } as const;
 * const approvalPolicy: ApprovalPolicy = ({ message }) =>
 *   message.type === "pay" && Number(message.payload.amountCents) > 100_000
 *     ? { decision: "require_approval", reason: "large payment", rule }
 *     : ALLOW;
 * ```
 */
export type ApprovalPolicy = (action: PolicyAction) => PolicyDecision | Promise<PolicyDecision>;

/** What an {@link AuthorizeApproval} hook is asked to allow. */
export interface ApprovalDecisionAsked {
  readonly decision: "approve" | "deny";
}

/**
 * Lets a governance layer refuse a vote (`RESUME_REFUSED`) beyond the rule's
 * own approver lists: `true` allows, `false` or a throw refuses.
 */
export type AuthorizeApproval = (approval: ApprovalView, approver: string, asked: ApprovalDecisionAsked) => boolean | Promise<boolean>;
