import { ApprovalNotFoundError } from "../approvals/approval-errors.js";
import type { ApprovalListFilter, ApprovalStatus, ApprovalView } from "../approvals/approval-types.js";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { viewOf } from "../approvals/approval-request.js";
import type { JsonObject } from "../message/json.js";
import { APPROVAL_CONTROL } from "../process/approval-release.js";
import { composeControl } from "../process/envelope.js";
import { assertApprover, assertReason } from "../process/decision-text.js";
import { storedApprovals } from "./cluster-approvals.js";
import { remoteApproval } from "./remote-approvals.js";
import type { ControlPath } from "./runtime-control.js";

/** Refuses options that are not an object, or a bad `timeoutMs`, with `INVALID_ARGUMENT`. */
function checkCallOptions(call: string, options: ApprovalCallOptions): void {
  if (typeof options !== "object" || (options as unknown) === null) throw new InvalidArgumentError("options", `${call}: options must be an object, got ${describeValue(options)}`);
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0)) {
    throw new InvalidArgumentError("timeoutMs", `${call}: timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`);
  }
}

const STATUSES: ReadonlySet<unknown> = new Set<ApprovalStatus>(["pending", "approved", "denied", "expired", "cancelled"]);

/** How long a vote or read of a request waits, and what may stop it. */
export interface ApprovalCallOptions {
  /**
   * Give up waiting after this long. For a request of this runtime's agent:
   * `ASK_TIMEOUT`, the vote stays queued (the agent still decides it). For a
   * request of an agent another process hosts: `AGENT_UNREACHABLE` when no
   * owner answered, `CONTROL_TIMEOUT` when the vote was taken and no answer
   * came (it may still take effect).
   * @defaultValue no limit here; 30000 for a vote in another process, 5000 for a read
   */
  timeoutMs?: number;
  /** Stop waiting when aborted (rejects with `signal.reason`). */
  signal?: AbortSignal;
}

/** Options of {@link RuntimeApprovals.approve}. */
export interface ApproveOptions extends ApprovalCallOptions {
  /** Why: recorded with the vote. */
  reason?: string;
}

/** Options of {@link RuntimeApprovals.deny}. */
export interface DenyApprovalOptions extends ApprovalCallOptions {
  /** Why: recorded with the vote and the decision, and given to the asker in `APPROVAL_DENIED`. */
  reason: string;
}

/**
 * `runtime.approvals`: the approval requests of held actions (see
 * docs/approvals.md). A vote is decided by the agent holding the request,
 * between two of its messages, with the same identity checks as a resume.
 * @example
 * ```ts
 * for (const request of await runtime.approvals.list({ status: "pending" })) {
 *   await runtime.approvals.approve(request.approvalId, "ana@finance", { reason: "invoice checked" });
 * }
 * ```
 */
export class RuntimeApprovals {
  /** @internal */
  constructor(private readonly path: ControlPath) {}

  /**
   * The requests this runtime's agents hold (and decided lately), oldest
   * first. With `scope: "cluster"`, those of every agent in the runtime's
   * store, wherever it runs (read from the stored states: with a shared
   * `PostgresStateStore`, the whole cluster's; this runtime's own agents are
   * shown as they are in memory). Rejects with `INVALID_ARGUMENT` for a bad
   * filter, and with the store's error for a cluster listing.
   */
  async list(filter: ApprovalListFilter = {}): Promise<ApprovalView[]> {
    if (typeof filter !== "object" || (filter as unknown) === null) throw new InvalidArgumentError("filter", `approvals.list(filter): filter must be an object, got ${describeValue(filter)}`);
    if (filter.status !== undefined && !STATUSES.has(filter.status)) throw new InvalidArgumentError("status", `approvals.list({ status }): status must be one of ${[...STATUSES].join(", ")}, got ${describeValue(filter.status)}`);
    if (filter.agent !== undefined && typeof filter.agent !== "string") throw new InvalidArgumentError("agent", `approvals.list({ agent }): agent must be an agent's name, got ${describeValue(filter.agent)}`);
    const scope: unknown = filter.scope ?? "local";
    if (scope === "cluster") return this.listStored(filter);
    if (scope !== "local") throw new InvalidArgumentError("scope", `approvals.list({ scope }): scope must be "local" or "cluster", got ${describeValue(scope)}`);
    return this.path.services.approvals.list(filter);
  }

  private async listStored(filter: ApprovalListFilter): Promise<ApprovalView[]> {
    const views = this.path.services.approvals.list(filter);
    for (const record of await storedApprovals(this.path.services, filter)) views.push(viewOf(record));
    return views.sort((a, b) => (a.approvalId < b.approvalId ? -1 : a.approvalId > b.approvalId ? 1 : 0));
  }

  /**
   * The request `approvalId`. A request of an agent another process hosts
   * (with a transport: found in the shared store) is read from its owner,
   * or from the store when no runtime on the bus hosts its agent. Rejects
   * with `APPROVAL_NOT_FOUND` when no such id (exactly) is known here or
   * stored; `AGENT_UNREACHABLE` when its owner does not answer.
   */
  async get(approvalId: string, options: ApprovalCallOptions = {}): Promise<ApprovalView> {
    const view = typeof approvalId === "string" ? this.path.services.approvals.get(approvalId) : undefined;
    if (view !== undefined) return view;
    if (typeof approvalId !== "string" || approvalId.length === 0) throw new ApprovalNotFoundError(String(approvalId));
    checkCallOptions(`approvals.get(${describeValue(approvalId)})`, options);
    return remoteApproval(this.path, `approvals.get(${describeValue(approvalId)})`, approvalId, {}, options);
  }

  /**
   * Votes to approve `approvalId` as `approver`. Resolves with the request
   * after the vote: once its last stage is satisfied it is `approved` and the
   * held message is queued for its handler (handled once). The same approver
   * voting twice in a stage counts once. A request of an agent another
   * process hosts (found in the shared store, with a NATS transport) is
   * decided by that process, as a resume is: its rules, its
   * `authorizeApproval`, its receipts; a retry of the same call there
   * counts once. Rejects, before anything is sent,
   * with `INVALID_APPROVER`, `APPROVAL_NOT_FOUND`; `AGENT_UNREACHABLE` when the
   * owner of a request of another process does not answer; then with
   * `APPROVER_NOT_ALLOWED` (not accepted by the current stage; the refusal is
   * recorded), `STALE_APPROVAL` (no longer pending), `RESUME_REFUSED`
   * (`authorizeApproval` said no), `APPROVAL_DIGEST_MISMATCH` (the held
   * message changed: the request is cancelled).
   */
  approve(approvalId: string, approver: string, options: ApproveOptions = {}): Promise<ApprovalView> {
    return this.vote("approve", approvalId, approver, options?.reason, options);
  }

  /**
   * Denies `approvalId` as `decider` (an approver the current stage accepts):
   * the request ends `denied`, nothing is handled, an asker still waiting is
   * rejected with `APPROVAL_DENIED` (reason and decider), and the agent's
   * `onApprovalDenied` runs. Rejects as {@link RuntimeApprovals.approve} does.
   */
  deny(approvalId: string, decider: string, options: DenyApprovalOptions): Promise<ApprovalView> {
    return this.vote("deny", approvalId, decider, options?.reason, options, true);
  }

  private async vote(vote: "approve" | "deny", approvalId: string, approver: string, reason: string | undefined, options: ApprovalCallOptions, reasonRequired = false): Promise<ApprovalView> {
    const call = `approvals.${vote}(${describeValue(approvalId)})`;
    if (typeof approvalId !== "string" || approvalId.length === 0) throw new InvalidArgumentError("approvalId", `${call}: pass the approvalId of a request (runtime.approvals.list())`);
    const holder = this.path.services.approvals.holderOf(approvalId);
    assertApprover(holder?.agentName ?? approvalId, approver, vote === "deny" ? "deny" : "resume");
    if (reason !== undefined || reasonRequired) assertReason(call, reason);
    checkCallOptions(call, options);
    const payload: JsonObject = { approvalId, approver, vote };
    if (reason !== undefined && reason !== "") payload.reason = reason;
    // Held by an agent of another process: its owner decides (the request is minted there, as this one is here).
    if (holder === undefined) return remoteApproval(this.path, call, approvalId, { vote, approver, ...(reason === undefined ? {} : { reason }) }, options);
    this.path.assertStarted(call);
    const services = this.path.services;
    await services.bus.control(composeControl(this.path.outside, holder.agentName, APPROVAL_CONTROL, payload), options.timeoutMs, options.signal);
    return this.get(approvalId);
  }
}
