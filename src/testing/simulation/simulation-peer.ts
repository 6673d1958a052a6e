import type { ApprovalView } from "../../approvals/approval-types.js";
import type { ApproveOptions, DenyApprovalOptions } from "../../runtime/runtime-approvals.js";
import type { DenyOptions, ResumeOptions, SuspendOptions } from "../../runtime/runtime-control.js";

/** An agent's status as its owner answers a {@link SimulationPeer.status} query. */
export interface PeerAgentStatus {
  /** The agent's name. */
  readonly name: string;
  /** Its `ProcessStatus` (`"RUNNING"`, `"SUSPENDED"` …). */
  readonly status: string;
  /** The pause's id while SUSPENDED, else `null`. */
  readonly suspensionId: string | null;
  /** Why it was suspended, else `null`. */
  readonly reason: string | null;
  /** When the pause began (ISO-8601), else `null`. */
  readonly since: string | null;
}

/**
 * A runtime of another process on the simulated bus, controlling the
 * simulation's agents as `runtime.suspend`/`resume`/`deny` and
 * `NatsTransport.status` do for an agent another process hosts: through the
 * real control protocol (a `requestId` kept on every retry, attempts of 1 s,
 * retries every 100 ms while nobody answers), on virtual time. The
 * simulation's runtime is the owner: its control server decides by
 * `authorizeResume` and receipts with its audit sink. Each call is an `op`
 * step (`op:peer.resume:<name>` …); each packet is a `net` step chosen like
 * any other, with `faults.network` applied. A name no runtime announced is
 * `AGENT_NOT_FOUND` at once; while the owner is killed and not yet
 * restarted, nobody answers: `AGENT_UNREACHABLE` at the deadline, or
 * `CONTROL_TIMEOUT` once a request was taken (or lost) and no answer came.
 * Refusals reject with a `RemoteControlError` carrying their code. The peer
 * is not killed by `sim.kill()`; its calls settle as the simulation runs
 * (`sim.run()` runs until they did).
 * @example
 * ```ts
 * const sim = simulate({ root, seed: 3, faults: { network: { drop: 0.2, delay: 0.2 } } });
 * await sim.start();
 * await sim.suspend("payer", "large payment");
 * const resumed = sim.peer.resume("payer", "alice", { timeoutMs: 5_000 });
 * await sim.run();
 * await resumed; // or AGENT_UNREACHABLE / CONTROL_TIMEOUT / a refusal by its code
 * ```
 */
export interface SimulationPeer {
  /** `runtime.suspend` of an agent another process hosts. @defaultValue timeoutMs 30000 */
  suspend(name: string, reason?: string, options?: SuspendOptions): Promise<void>;
  /** `runtime.resume` of an agent another process hosts; `INVALID_APPROVER` before anything is sent. @defaultValue timeoutMs 30000 */
  resume(name: string, approver: string, options?: ResumeOptions): Promise<void>;
  /** `runtime.deny` of an agent another process hosts. @defaultValue timeoutMs 30000 */
  deny(name: string, decider: string, options?: DenyOptions): Promise<void>;
  /** The owner's answer to a status query. @defaultValue timeoutMs 5000 */
  status(name: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<PeerAgentStatus>;
  /**
   * `runtime.approvals.approve` of a request held by `name`, an agent
   * another process hosts; resolves with the request as its owner answered.
   * The peer reads no store, so it names the agent; the owner checks that
   * `name` holds `approvalId` (`APPROVAL_NOT_FOUND` otherwise).
   * @defaultValue timeoutMs 30000
   */
  approve(name: string, approvalId: string, approver: string, options?: ApproveOptions): Promise<ApprovalView>;
  /** `runtime.approvals.deny` of a request held by `name`, an agent another process hosts (see {@link SimulationPeer.approve}). @defaultValue timeoutMs 30000 */
  denyApproval(name: string, approvalId: string, decider: string, options: DenyApprovalOptions): Promise<ApprovalView>;
}
