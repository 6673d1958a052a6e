import { ApprovalNotFoundError } from "../approvals/approval-errors.js";
import { viewOf } from "../approvals/approval-request.js";
import type { ApprovalView } from "../approvals/approval-types.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { AgentUnreachableError, InvalidWireMessageError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { sleep } from "../time/clock.js";
import { findStoredApproval } from "./cluster-approvals.js";
import type { ControlPath } from "./runtime-control.js";

/**
 * Approval requests of agents another process hosts (docs/approvals.md,
 * "Across processes"): the requester's side finds the holding agent in the
 * shared store and sends the vote (or read) to its owner as an `"approval"`
 * control request; the owner's side checks that one of its agents holds
 * that very request and decides it through its own `runtime.approvals`,
 * exactly as a call made there.
 * @module
 */

/** How long a vote on a request of another process waits for its owner when no `timeoutMs` is given (as a remote resume). */
const REMOTE_VOTE_TIMEOUT_MS = 30_000;
/** How long a read of a request of another process waits for its owner when no `timeoutMs` is given (as a status query). */
const REMOTE_GET_TIMEOUT_MS = 5_000;
/** How often a vote for an agent known only to the store looks for its owner on the bus. */
const OWNER_POLL_MS = 100;

/** How long a call on a request of another process may wait, and what may stop it. @internal */
export interface RemoteApprovalOptions {
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Sends `args` (a vote, or a read when it has no `vote`) for `approvalId`
 * to the runtime hosting the agent the shared store says holds it, and
 * resolves with the request as that runtime answers. A read of a request
 * whose agent no runtime on the bus hosts resolves with its stored view.
 * @throws (rejects) `APPROVAL_NOT_FOUND` when this runtime has no transport or
 * no stored request has the id; `AGENT_UNREACHABLE` when no owner answered
 * by the deadline; the owner's refusal by its code (a `RemoteControlError`).
 * @internal
 */
export async function remoteApproval(path: ControlPath, call: string, approvalId: string, args: JsonObject, options: RemoteApprovalOptions): Promise<ApprovalView> {
  const { services } = path;
  const transport = services.bus.transport;
  if (transport === undefined) throw new ApprovalNotFoundError(approvalId);
  const stored = await findStoredApproval(services, approvalId);
  if (stored === undefined) throw new ApprovalNotFoundError(approvalId);
  const name = stored.agent;
  const read = args.vote === undefined;
  if (read && !transport.hosts(name)) return viewOf(stored);
  path.assertStarted(call);
  const timeoutMs = options.timeoutMs ?? (read ? REMOTE_GET_TIMEOUT_MS : REMOTE_VOTE_TIMEOUT_MS);
  const deadline = services.clock.now() + timeoutMs;
  // Known to the store, not announced: its owner is down or still starting; nothing is sent until one announces it.
  while (!transport.hosts(name)) {
    if (services.clock.now() >= deadline) throw new AgentUnreachableError(name, timeoutMs, "store");
    await sleep(services.clock, OWNER_POLL_MS, options.signal);
  }
  const answer = await transport.control(name, "approval", { approvalId, ...args }, Math.max(1, deadline - services.clock.now()), options.signal);
  return answeredView(name, approvalId, answer);
}

/**
 * The request in an owner's answer, checked to be the one asked about.
 * @throws {@link InvalidWireMessageError} for an answer without it (a runtime of an older version)
 */
function answeredView(name: string, approvalId: string, answer: JsonObject): ApprovalView {
  const view = answer.view as Partial<ApprovalView> | null | undefined;
  if (typeof view !== "object" || view === null || Array.isArray(view) || view.approvalId !== approvalId || view.agent !== name) {
    throw new InvalidWireMessageError(`the runtime hosting '${name}' answered a request about approval ${approvalId} without it (${describeValue(answer.view)}); run the same civitas-ts version in every process`);
  }
  return view as ApprovalView;
}

/** The runtime's approval calls, as the owner's side uses them for requests from other runtimes. @internal */
export interface ApprovalCalls {
  get(approvalId: string): Promise<ApprovalView>;
  approve(approvalId: string, approver: string, options: { reason?: string; timeoutMs?: number }): Promise<ApprovalView>;
  deny(approvalId: string, decider: string, options: { reason: string; timeoutMs?: number }): Promise<ApprovalView>;
}

/**
 * The owner's side: carries out an `"approval"` control request from
 * another runtime for the agent `name`, through this runtime's own calls
 * (the approver is checked, `authorizeApproval` asked, the vote receipted
 * here). Only a request that `name`, an agent of this runtime, holds is
 * touched: an id it does not hold is `APPROVAL_NOT_FOUND`, whatever the
 * requester believed. A retried vote (flagged `retry` by its requester
 * after an attempt got no answer) refused as `STALE_APPROVAL` is answered
 * with the request when the request records that very vote by that
 * approver: its first attempt took effect and the answer was lost with the
 * owner's memory of the request id (a restart).
 * @internal
 */
export async function answerApproval(services: RuntimeServices, approvals: ApprovalCalls, name: string, args: JsonObject, timeoutMs: number): Promise<JsonObject> {
  const { approvalId, vote, approver, reason } = args;
  if (typeof approvalId !== "string" || (vote !== undefined && vote !== "approve" && vote !== "deny") || (reason !== undefined && typeof reason !== "string")) {
    throw new InvalidWireMessageError(`an approval request for '${name}' needs an approvalId and a vote "approve" or "deny" (or none, to read it), got ${describeValue(args)}`);
  }
  // Only a request of this runtime, held by the very agent the request was addressed to: never passed on.
  if (services.approvals.holderOf(approvalId)?.agentName !== name) throw new ApprovalNotFoundError(approvalId);
  if (vote === undefined) return { view: viewJson(await approvals.get(approvalId)) };
  const who = approver as string; // checked by approve/deny (INVALID_APPROVER goes back by its code)
  try {
    const view = vote === "approve" ? await approvals.approve(approvalId, who, reason === undefined ? { timeoutMs } : { reason, timeoutMs }) : await approvals.deny(approvalId, who, { reason: reason as string, timeoutMs });
    return { view: viewJson(view) };
  } catch (error) {
    if (args.retry !== true || !(error instanceof CivitasError) || error.code !== "STALE_APPROVAL") throw error;
    const view = services.approvals.get(approvalId);
    if (view === undefined || !view.votes.some((counted) => counted.approver === who && counted.vote === vote)) throw error;
    return { view: viewJson(view) };
  }
}

/** A view as an answer carries it: plain JSON (absent fields left out). */
function viewJson(view: ApprovalView): JsonObject {
  return JSON.parse(JSON.stringify(view)) as JsonObject;
}
