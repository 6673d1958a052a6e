import { requestControl } from "../../bus/control-protocol.js";
import { notFound } from "../../bus/message-bus.js";
import type { ControlOperation } from "../../bus/transport.js";
import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import type { JsonObject } from "../../message/json.js";
import { checkExpiresInMs } from "../../process/pause-deadline.js";
import { assertApprover, assertReason } from "../../process/decision-text.js";
import type { DenyOptions, ResumeOptions, SuspendOptions } from "../../runtime/runtime-control.js";
import type { ApprovalCallOptions, ApproveOptions, DenyApprovalOptions } from "../../runtime/runtime-approvals.js";
import type { ApprovalView } from "../../approvals/approval-types.js";
import type { Clock } from "../../time/clock.js";
import type { SimulatedNetwork } from "./simulated-network.js";
import type { PeerAgentStatus, SimulationPeer } from "./types.js";

/** How long a peer's suspend, resume or deny waits by default, as a runtime's control of an agent in another process. */
const CONTROL_TIMEOUT_MS = 30_000;
/** How long a peer's status query waits by default, as `NatsTransport.status`. */
const STATUS_TIMEOUT_MS = 5_000;

/**
 * Another process on the simulated bus: it controls the simulation's agents
 * as a runtime of another process does, through the real `requestControl`
 * (same `requestId` on every retry, `AGENT_UNREACHABLE`, `CONTROL_TIMEOUT`,
 * refusals by their code), on the simulation's virtual time. It is not
 * killed by `sim.kill()`.
 * @internal
 */
export class SimulatedPeer implements SimulationPeer {
  constructor(
    private readonly network: SimulatedNetwork,
    private readonly clock: Clock,
    /** Records the operation in the trace (and refuses it when the simulation is not running). */
    private readonly record: (operation: string, name: string) => void,
  ) {}

  async suspend(name: string, reason = "", options: SuspendOptions = {}): Promise<void> {
    this.record("suspend", name);
    assertReason(`peer.suspend('${name}')`, reason);
    const expiresInMs = checkExpiresInMs(`peer.suspend('${name}')`, options.expiresInMs);
    await this.control(name, "suspend", expiresInMs === undefined ? { reason } : { reason, expiresInMs }, options.timeoutMs ?? CONTROL_TIMEOUT_MS, options.signal);
  }

  async resume(name: string, approver: string, options: ResumeOptions = {}): Promise<void> {
    this.record("resume", name);
    assertApprover(name, approver); // before anything is sent
    const args: JsonObject = { approver };
    if (options.suspensionId !== undefined) args.suspensionId = options.suspensionId;
    if (options.acceptIdentityChange === true) args.acceptIdentityChange = true;
    await this.control(name, "resume", args, options.timeoutMs ?? CONTROL_TIMEOUT_MS, options.signal);
  }

  async deny(name: string, decider: string, options: DenyOptions = {}): Promise<void> {
    this.record("deny", name);
    assertApprover(name, decider, "deny");
    const args: JsonObject = { approver: decider, decision: "deny" };
    if (options.suspensionId !== undefined) args.suspensionId = options.suspensionId;
    if (options.reason !== undefined) args.reason = options.reason;
    await this.control(name, "resume", args, options.timeoutMs ?? CONTROL_TIMEOUT_MS, options.signal);
  }

  async status(name: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<PeerAgentStatus> {
    this.record("status", name);
    const answer = await this.control(name, "status", {}, options.timeoutMs ?? STATUS_TIMEOUT_MS, options.signal);
    const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
    return { name, status: text(answer.status) ?? "UNKNOWN", suspensionId: text(answer.suspensionId), reason: text(answer.reason), since: text(answer.since) };
  }

  async approve(name: string, approvalId: string, approver: string, options: ApproveOptions = {}): Promise<ApprovalView> {
    this.record("approve", name);
    return this.vote(name, approvalId, "approve", approver, options.reason, options);
  }

  async denyApproval(name: string, approvalId: string, decider: string, options: DenyApprovalOptions): Promise<ApprovalView> {
    this.record("denyApproval", name);
    assertReason(`peer.denyApproval('${name}')`, options?.reason);
    return this.vote(name, approvalId, "deny", decider, options.reason, options);
  }

  private async vote(name: string, approvalId: string, vote: "approve" | "deny", approver: string, reason: string | undefined, options: ApprovalCallOptions): Promise<ApprovalView> {
    if (typeof approvalId !== "string" || approvalId.length === 0) throw new InvalidArgumentError("approvalId", `peer.${vote}('${name}'): pass the approvalId of a request, got ${describeValue(approvalId)}`);
    assertApprover(name, approver, vote === "deny" ? "deny" : "resume"); // before anything is sent
    const args: JsonObject = reason === undefined ? { approvalId, vote, approver } : { approvalId, vote, approver, reason };
    const answer = await this.control(name, "approval", args, options.timeoutMs ?? CONTROL_TIMEOUT_MS, options.signal);
    return answer.view as unknown as ApprovalView;
  }

  private control(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number, signal: AbortSignal | undefined): Promise<JsonObject> {
    if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new InvalidArgumentError("timeoutMs", `peer.${operation}('${name}'): timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`);
    }
    // As NatsTransport.control: a name nobody announced is AGENT_NOT_FOUND at once.
    if (!this.network.knows(name)) throw notFound(name);
    return requestControl({ channel: this.network, clock: this.clock, signal }, name, operation, args, timeoutMs);
  }
}
