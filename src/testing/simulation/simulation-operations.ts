import type { ApprovalView } from "../../approvals/approval-types.js";
import type { JsonObject } from "../../message/json.js";
import type { Message } from "../../message/message.js";
import type { Pause } from "../../process/pause.js";
import type { ApproveOptions, DenyApprovalOptions } from "../../runtime/runtime-approvals.js";
import type { DenyOptions, ResumeOptions, SuspendOptions } from "../../runtime/runtime-control.js";
import type { RuntimeAskOptions, RuntimeSendOptions } from "../../runtime/runtime-options.js";
import type { Runtime } from "../../runtime/runtime.js";
import type { Simulation } from "./types.js";

/**
 * The calls a test makes on a running simulation's runtime (send, ask,
 * suspend, resume, deny, approve, deny an approval): each is recorded as an
 * operation by {@link SimulationOperations.operate}, then made on the
 * runtime it returns.
 * @internal
 */
export abstract class SimulationOperations implements Pick<Simulation, "send" | "ask" | "suspend" | "resume" | "deny" | "approve" | "denyApproval"> {
  /** Records a user operation; the runtime to call. */
  protected abstract operate(operation: string, agent: string, type: string, detail?: string): Runtime;

  async send(to: string, type: string, payload: JsonObject = {}, options: Omit<RuntimeSendOptions, "type"> = {}): Promise<void> {
    const runtime = this.operate(`send:${to}:${type}`, to, type);
    return runtime.send(to, payload, { ...options, type });
  }

  async ask(to: string, type: string, payload: JsonObject = {}, options: Omit<RuntimeAskOptions, "type"> = {}): Promise<Message> {
    const runtime = this.operate(`ask:${to}:${type}`, to, type);
    return runtime.ask(to, payload, { ...options, type });
  }

  async suspend(name: string, reason?: string, options?: SuspendOptions): Promise<Pause> {
    return this.operate(`suspend:${name}`, name, "suspend").suspend(name, reason, options);
  }

  async resume(name: string, approver: string, options?: ResumeOptions): Promise<void> {
    return this.operate(`resume:${name}`, name, "resume", approver).resume(name, approver, options);
  }

  async deny(name: string, decider: string, options?: DenyOptions): Promise<void> {
    return this.operate(`deny:${name}`, name, "deny", decider).deny(name, decider, options);
  }

  /** `runtime.approvals.approve(approvalId, approver, options)` of the current runtime, recorded as an operation. */
  async approve(approvalId: string, approver: string, options?: ApproveOptions): Promise<ApprovalView> {
    return this.operate(`approve:${approvalId}`, approvalId, "approve", approver).approvals.approve(approvalId, approver, options);
  }

  /** `runtime.approvals.deny(approvalId, decider, options)` of the current runtime, recorded as an operation. */
  async denyApproval(approvalId: string, decider: string, options: DenyApprovalOptions): Promise<ApprovalView> {
    return this.operate(`deny-approval:${approvalId}`, approvalId, "deny-approval", decider).approvals.deny(approvalId, decider, options);
  }
}
