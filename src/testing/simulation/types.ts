import type { AuditEvent } from "../../audit/audit-event.js";
import type { ApprovalView } from "../../approvals/approval-types.js";
import type { JsonObject } from "../../message/json.js";
import type { Message } from "../../message/message.js";
import type { AgentProcess } from "../../process/agent-process.js";
import type { Pause } from "../../process/pause.js";
import type { ProcessStatus } from "../../contracts/process-status.js";
import type { ResumeOptions, DenyOptions, SuspendOptions } from "../../runtime/runtime-control.js";
import type { ApproveOptions, DenyApprovalOptions } from "../../runtime/runtime-approvals.js";
import type { RuntimeAskOptions, RuntimeOptions, RuntimeSendOptions } from "../../runtime/runtime-options.js";
import type { SupervisedChild } from "../../contracts/child.js";
import type { SimulationTimeOptions } from "./time-choices.js";
import type { SimulationNode, SimulationNodes } from "./simulation-node.js";
import type { Chooser } from "./chooser.js";
import type { SimulationFaults } from "./simulation-faults.js";
import type { SimulationPeer } from "./simulation-peer.js";
import type { SimulationStep } from "./simulation-step.js";

// The simulation's public types, each beside its concept, named here too (where they have always been imported from).
export type { Chooser, SimulationChoice } from "./chooser.js";
export type { SimulationFaultKind, SimulationFaults, SimulationFaultTarget } from "./simulation-faults.js";
export type { PeerAgentStatus, SimulationPeer } from "./simulation-peer.js";
export type { SimulationStep, SimulationStepKind } from "./simulation-step.js";

/** Read access to a simulation's system, for invariants and tests. */
export interface SimulationView {
  /** The live instance of agent `name` (of the current incarnation, after a kill); throws `AGENT_NOT_FOUND` when there is none. */
  agent<A extends AgentProcess = AgentProcess>(name: string): A;
  /** The status of agent `name`, or `undefined` when there is no such agent. */
  status(name: string): ProcessStatus | undefined;
  /** What the store holds for `name` now (what a kill would keep, lost writes aside), or `undefined`. */
  stored(name: string): JsonObject | undefined;
  /** The audit events the audit log acknowledged, oldest first (they survive a kill). */
  readonly audit: readonly AuditEvent[];
  /** Virtual time, epoch ms. */
  readonly now: number;
  /** The view of node `name` of a simulation with `nodes` (`"main"`: the root's runtime); throws `INVALID_ARGUMENT` for an unknown node. */
  node(name: string): SimulationView;
}

/**
 * Checked after every step: return (or throw) a description of what is
 * wrong, or nothing when all is well. A failure ends the run with
 * `SIMULATION_INVARIANT`.
 */
export type SimulationInvariant = (view: SimulationView) => string | void | undefined;

/** Options of {@link simulate}. */
export interface SimulationOptions {
  /** Builds the tree; called once at `start()` and again after every kill (the old objects are discarded). */
  readonly root: () => SupervisedChild | readonly SupervisedChild[];
  /** Seed of the default chooser ({@link randomChooser}) and of every other draw. @defaultValue 0 */
  readonly seed?: number;
  /** Decides each step instead of the seeded random chooser. */
  readonly chooser?: Chooser;
  /** Faults to inject, asked of the chooser. @defaultValue none */
  readonly faults?: SimulationFaults;
  /** Checked after every step, beside the runtime's own invariants. */
  readonly invariants?: readonly SimulationInvariant[];
  /** Other Runtime options; the clock, store, audit sink and keep-alive are the simulation's. */
  readonly runtime?: Omit<RuntimeOptions, "root" | "clock" | "store" | "auditSink" | "keepAlive" | "transport">;
  /** A run that takes more steps fails with `SIMULATION_STEP_LIMIT`. @defaultValue 10000 */
  readonly maxSteps?: number;
  /** What to do when a handler awaits a promise the runtime does not control: record it in the trace, or fail (`SIMULATION_EXTERNAL_AWAIT`). @defaultValue "record" */
  readonly externalAwaits?: "record" | "fail";
  /** Virtual time at the start, epoch ms. @defaultValue 1_700_000_000_000 */
  readonly startMs?: number;
  /** Time as a choice: timers that fire while other steps are ready, and simulated latency per step. @defaultValue none */
  readonly time?: SimulationTimeOptions;
  /**
   * Other runtimes (nodes) of the simulated system, joined to the main one
   * (`root`, node `"main"`) by the simulated bus; see {@link Simulation.node}.
   * Agent names must be unique across nodes (the bus routes by name):
   * `simulate()` refuses a name used on two nodes with `DUPLICATE_NAME`.
   * @defaultValue none
   */
  readonly nodes?: SimulationNodes;
}

/** A running simulation of a whole runtime; see {@link simulate}. */
export interface Simulation {
  /** Builds the runtime from `root()` and runs steps until its `start()` resolved. */
  start(): Promise<void>;
  /** Sends a message from outside (`runtime.send`), recorded as an `op` step; it is queued at once. */
  send(to: string, type: string, payload?: JsonObject, options?: Omit<RuntimeSendOptions, "type">): Promise<void>;
  /** Asks from outside (`runtime.ask`), recorded as an `op` step; the promise settles as the simulation runs. */
  ask(to: string, type: string, payload?: JsonObject, options?: Omit<RuntimeAskOptions, "type">): Promise<Message>;
  /** `runtime.suspend`, recorded as an `op` step; settles as the simulation runs, with the pause. */
  suspend(name: string, reason?: string, options?: SuspendOptions): Promise<Pause>;
  /** `runtime.resume`, recorded as an `op` step; settles as the simulation runs. */
  resume(name: string, approver: string, options?: ResumeOptions): Promise<void>;
  /** `runtime.deny`, recorded as an `op` step; settles as the simulation runs. */
  deny(name: string, decider: string, options?: DenyOptions): Promise<void>;
  /** `runtime.approvals.approve`, recorded as an `op` step; settles as the simulation runs. */
  approve(approvalId: string, approver: string, options?: ApproveOptions): Promise<ApprovalView>;
  /** `runtime.approvals.deny`, recorded as an `op` step; settles as the simulation runs. */
  denyApproval(approvalId: string, decider: string, options: DenyApprovalOptions): Promise<ApprovalView>;
  /** Runs chosen steps until nothing is ready and no timer is left, advancing virtual time as needed. Rejects with {@link SimulationFailure}. */
  run(): Promise<void>;
  /** Runs chosen steps until nothing is ready, without advancing virtual time. Rejects with {@link SimulationFailure}. */
  idle(): Promise<void>;
  /**
   * Kills the process ("kill -9"): keeps only what the store and audit log
   * acknowledged, builds a new runtime from `root()` and starts it. With
   * `downMs`, the process stays down that long in virtual time first (steps
   * run meanwhile: the {@link Simulation.peer}'s requests find nobody to answer them).
   */
  kill(options?: { downMs?: number }): Promise<void>;
  /** Stops the runtime, running steps (and virtual time) until it stopped; then the simulation ends. Idempotent. */
  stop(): Promise<void>;
  /** Another process on the simulated bus, controlling this runtime's agents across processes; see {@link SimulationPeer}. */
  readonly peer: SimulationPeer;
  /**
   * The node `name` of `nodes` (its calls, view and kill); `"main"` is the
   * root's runtime, whose calls are this simulation's own.
   * @throws {@link InvalidArgumentError} when there is no such node
   */
  node(name: string): SimulationNode;
  /**
   * Cuts the link between nodes `a` and `b` (`"main"`, a name of `nodes`,
   * or `"peer"`): every packet between them that arrives while it is cut is
   * lost (a `net.drop` step), never held back; asks across it time out,
   * control requests end in `AGENT_UNREACHABLE` or `CONTROL_TIMEOUT`.
   * Recorded as an `op` step.
   */
  partition(a: string, b: string): void;
  /** Heals the link between `a` and `b`: packets between them arrive again. Recorded as an `op` step. */
  heal(a: string, b: string): void;
  /** Every step so far. */
  readonly trace: readonly SimulationStep[];
  /** Read access to the system. */
  readonly view: SimulationView;
  /** The trace as readable text, one step a line; `mark` flags one step (`>>`). */
  formatTrace(mark?: number): string;
}
