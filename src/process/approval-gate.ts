import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import { ApprovalDeniedError, PolicyFailedError } from "../approvals/approval-errors.js";
import { newRecord, type ApprovalRecord } from "../approvals/approval-request.js";
import { checkApprovalRule } from "../approvals/approval-rule.js";
import type { ApprovalPolicy, ApprovalRule, ApprovalView, PolicyDecision } from "../approvals/approval-types.js";
import type { PendingReceipt } from "../approvals/pending-receipts.js";
import { actionDigest } from "../approvals/canonical-json.js";
import { frozenWire } from "../approvals/stored-approvals.js";
import { uuidv7 } from "../message/ids.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { toWire } from "../message/to-wire.js";
import type { TimerHandle } from "../time/clock.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { assertReason } from "./decision-text.js";
import { refuse } from "./effects.js";
import type { ProcessRunner } from "./process-runner.js";
import { admitReleased, armDeadlines } from "./approval-release.js";
import { newReceipt, storeWithReceipts } from "./approval-receipts.js";

/** How many decided requests an agent keeps (for `get`, and to refuse replays); older ones are dropped. */
const KEPT_DECIDED = 100;

/**
 * One agent's approval gate and held actions: the policy consulted before
 * `handle`, the requests it holds (stored with its state under
 * `APPROVALS_KEY`), the releases queued, the deadline timer. Made when the
 * agent has a policy, holds a message, or restores requests: an agent with
 * none has no gate, and its loop reads one `undefined` per message.
 * @internal
 */
export class ApprovalGate {
  /** Every request the agent holds or decided lately, by id, oldest first. */
  readonly records = new Map<string, ApprovalRecord>();
  /** The receipts written ahead and not appended yet, by request, oldest first (`approval-receipts.ts`). */
  readonly receipts = new Map<string, PendingReceipt[]>();
  /** The run appending owed receipts, while one goes. */
  appending: Promise<void> | undefined;
  /** Approved messages the runtime put in the mailbox, each the one object it queued, with its request. */
  readonly released = new Map<Message, string>();
  /** What `requireApproval` asked for while the current message was handled. */
  holding: { readonly rule: ApprovalRule; readonly reason: string } | undefined;
  /** The released message being handled now, and its approval (what `this.approval` shows). */
  releasing: { readonly message: Message; readonly view: ApprovalView } | undefined;
  /** The timer of the nearest escalation or expiry. */
  timer: TimerHandle | undefined;
  timerAt: number | undefined;
  /** Allowed by the policy, counted (allows are not logged row by row). */
  allowed = 0;

  constructor(
    readonly runner: ProcessRunner,
    readonly policy: ApprovalPolicy | undefined,
  ) {}

  /** The agent's name: the board finds records through this gate. */
  get agentName(): string {
    return this.runner.agent.name;
  }

  record(approvalId: string): ApprovalRecord | undefined {
    return this.records.get(approvalId);
  }
}

/** The agent's gate, made on first need. @internal */
export function gateOf(r: ProcessRunner): ApprovalGate {
  return (r.gate ??= new ApprovalGate(r, undefined));
}

const ALLOW = true;

/**
 * Decides whether the loop hands `message` to `handle` now: `true` at once
 * when the policy allows synchronously (the common case, no promise), or a
 * promise of the answer. A message the runtime released after its approval
 * is consumed first (`approval-release.ts`); a held or denied one resolves `false`.
 * @internal
 */
export function admit(gate: ApprovalGate, message: Message, span: Span | undefined): boolean | Promise<boolean> {
  if (gate.released.size > 0) {
    const approvalId = gate.released.get(message);
    if (approvalId !== undefined) {
      gate.released.delete(message);
      // The handle span of the release carries the id, as the span of the request did: the attribute links them.
      gate.runner.services?.telemetry.setAttribute(span, "civitas.approval.id", approvalId);
      return admitReleased(gate, message, approvalId);
    }
  }
  const policy = gate.policy;
  if (policy === undefined) return ALLOW;
  let answer: PolicyDecision | Promise<PolicyDecision>;
  try {
    answer = policy({ agent: gate.runner.agent.name, message });
  } catch (error) {
    return policyFailed(gate, message, "it threw", error);
  }
  if (answer instanceof Promise) {
    return answer.then(
      (decision) => decide(gate, message, decision, span),
      (error: unknown) => policyFailed(gate, message, "it rejected", error),
    );
  }
  return decide(gate, message, answer, span);
}

function decide(gate: ApprovalGate, message: Message, answer: unknown, span: Span | undefined): boolean | Promise<boolean> {
  const decision = typeof answer === "object" && answer !== null ? (answer as Record<string, unknown>).decision : undefined;
  if (decision === "allow") {
    gate.allowed++;
    gate.runner.services?.telemetry.setAttribute(span, "civitas.policy.decision", "allow");
    return ALLOW;
  }
  const reason = (answer as Record<string, unknown> | null)?.reason;
  if (typeof reason !== "string" || reason.length > 1024) return policyFailed(gate, message, `it answered ${describeValue(answer)} without a string reason of at most 1,024 characters`);
  if (decision === "deny") return policyDenied(gate, message, reason, undefined);
  if (decision !== "require_approval") return policyFailed(gate, message, `it answered ${describeValue(answer)}`);
  let rule: ApprovalRule;
  try {
    rule = checkApprovalRule(`the policy of '${gate.runner.agent.name}'`, (answer as Record<string, unknown>).rule);
  } catch (error) {
    return policyFailed(gate, message, "its rule is malformed", error);
  }
  return holdMessage(gate, message, rule, reason, span).then(() => false);
}

async function policyFailed(gate: ApprovalGate, message: Message, problem: string, cause?: unknown): Promise<boolean> {
  const error = new PolicyFailedError(gate.runner.agent.name, problem, cause === undefined ? undefined : { cause });
  gate.runner.requireServices().logger.error(error.message, { error, message: message.id });
  return policyDenied(gate, message, error.message, error);
}

/** A policy's deny (or failure): a signed `policy.denied` receipt, the asker rejected, nothing handled. */
async function policyDenied(gate: ApprovalGate, message: Message, reason: string, failure: PolicyFailedError | undefined): Promise<boolean> {
  const r = gate.runner;
  const details: JsonObject = { digest: digestOf(r, message), messageId: message.id, type: message.type, sender: message.sender, reason };
  if (failure !== undefined) details.error = failure.code;
  await r.requireServices().telemetry.audit("policy.denied", r.agent.name, details);
  if (message.replyTo !== undefined && message.correlationId !== undefined) refuse(r, message, failure ?? new ApprovalDeniedError(r.agent.name, undefined, "policy", reason));
  return false;
}

/** The digest of `message` as held by `r`'s agent (SPEC §12.1). @internal */
export function digestOf(r: ProcessRunner, message: Message): string {
  return actionDigest(r.agent.name, message.type, message.payload);
}

/**
 * Holds `message` under `rule`: the request is stored with the agent's
 * state in one atomic write before anything else can see it (the board, the
 * `approval.requested` receipt, `approval.changed`). When that write fails,
 * nothing is held: the asker is rejected with the store's error, and the
 * message is not handled.
 * @internal
 */
export async function holdMessage(gate: ApprovalGate, message: Message, rule: ApprovalRule, reason: string, span?: Span): Promise<void> {
  const r = gate.runner;
  const services = r.requireServices();
  const now = services.clock.now();
  const digest = digestOf(r, message);
  const record = newRecord(uuidv7(now), r.agent.name, frozenWire(toWire(message)), digest, rule, reason, now);
  pruneDecided(gate);
  try {
    // The request and its receipt, written ahead, in one write; the receipt is appended after it.
    await storeWithReceipts(gate, record, [newReceipt(gate, record, "approval.requested", record.requestedAt)]);
  } catch (error) {
    services.logger.error(`'${r.agent.name}' could not store the approval request for message ${message.id}; nothing is held and the message is not handled`, { error });
    if (message.replyTo !== undefined && message.correlationId !== undefined) refuse(r, message, error instanceof Error ? error : new Error(String(error)));
    return;
  }
  services.approvals.add(record.approvalId, gate);
  services.telemetry.setAttribute(span, "civitas.approval.id", record.approvalId);
  services.telemetry.setAttribute(span, "civitas.policy.decision", "require_approval");
  services.approvals.report(record);
  armDeadlines(gate);
}

/** Drops the oldest decided (and, if approved, consumed) requests beyond {@link KEPT_DECIDED}. */
function pruneDecided(gate: ApprovalGate): void {
  let decided = 0;
  for (const record of gate.records.values()) if (isSettled(record)) decided++;
  for (const [id, record] of gate.records) {
    if (decided <= KEPT_DECIDED) return;
    if (!isSettled(record) || gate.receipts.has(id)) continue;
    gate.records.delete(id);
    gate.runner.services?.approvals.remove(id);
    decided--;
  }
}

function isSettled(record: ApprovalRecord): boolean {
  return record.status !== "pending" && (record.status !== "approved" || record.consumed);
}

/**
 * After `handle` returned (or threw) for `message`: the released message's
 * approval is no longer shown, and a `requireApproval()` made during a
 * handler that returned holds the message now (a handler that threw holds
 * nothing). Returns the promise of the hold, or `undefined`.
 * @internal
 */
export function afterHandle(gate: ApprovalGate, message: Message, failed: boolean, result: unknown): Promise<void> | undefined {
  gate.releasing = undefined;
  const holding = gate.holding;
  if (holding === undefined) return undefined;
  gate.holding = undefined;
  if (failed) return undefined;
  if (result !== undefined && result !== null) {
    gate.runner.requireServices().logger.warn(`'${gate.runner.agent.name}'.handle called requireApproval() and returned a result; the result is dropped (the reply comes when the held message is handled after its approval)`);
  }
  return holdMessage(gate, message, holding.rule, holding.reason);
}

/** The view of the approval of the released message being handled now, if `current` is it. @internal */
export function currentApproval(gate: ApprovalGate | undefined, current: Message | undefined): ApprovalView | undefined {
  const releasing = gate?.releasing;
  return releasing !== undefined && releasing.message === current ? releasing.view : undefined;
}

/**
 * `this.requireApproval(options)`: checks the rule and reason, then marks the
 * message being handled to be held under them once `handle` returns.
 * @throws {@link InvalidArgumentError} outside `handle`, or for a malformed rule or reason
 * @internal
 */
export function requestHold(r: ProcessRunner, options: { rule: ApprovalRule; reason: string }): void {
  const name = r.agent.name;
  if (r.current === undefined) {
    throw new InvalidArgumentError("requireApproval", `'${name}' called requireApproval() outside handle(); it holds the message being handled`);
  }
  const rule = checkApprovalRule(`'${name}'.requireApproval()`, options?.rule);
  assertReason(`'${name}'.requireApproval()`, options.reason);
  gateOf(r).holding = { rule, reason: options.reason };
}
