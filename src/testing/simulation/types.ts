import type { AuditEvent } from "../../audit/audit-event.js";
import type { JsonObject } from "../../message/json.js";
import type { Message } from "../../message/message.js";
import type { AgentProcess } from "../../process/agent-process.js";
import type { Pause } from "../../process/pause.js";
import type { ProcessStatus } from "../../contracts/process-status.js";
import type { ResumeOptions, DenyOptions, SuspendOptions } from "../../runtime/runtime-control.js";
import type { ApproveOptions, DenyApprovalOptions } from "../../runtime/runtime-approvals.js";
import type { ApprovalView } from "../../approvals/approval-types.js";
import type { RuntimeAskOptions, RuntimeOptions, RuntimeSendOptions } from "../../runtime/runtime-options.js";
import type { SupervisedChild } from "../../contracts/child.js";
import type { SimulationTimeOptions } from "./time-choices.js";
import type { SimulationNode, SimulationNodes } from "./simulation-node.js";

/**
 * What a step of a simulation did, as its trace records it:
 *
 * - `op`: a user operation (`sim.send`, `sim.ask`, `sim.suspend` …);
 * - `deliver`: an agent took its next message (the mailbox decided which);
 * - `reply`: an ask's reply settled the asker's request;
 * - `timer`: virtual time advanced to the earliest timer, which fired;
 * - `store.write`: a state store write (`set` or `delete`) completed;
 *   `store.fail`, `store.hang`, `store.lose`: it failed, never completes, or
 *   was acknowledged but is gone after the next kill; `store.fenced`: it was
 *   refused with `STATE_FENCED` because another process took its agent over;
 * - `audit`, `suspend`, `resume`, `decision`, `restart`: an audit append
 *   completed (`suspend` for `agent.suspend`, `resume` for `agent.resume`,
 *   `decision` for `agent.deny`, `restart` for `agent.restart`);
 * - `crash`: an agent was made to crash at this step (its handler, or
 *   `onResume`, threw; or its store write failed, before or after being applied);
 * - `kill`: the process was killed ("kill -9") and the runtime rebuilt from the store;
 * - `net`: a packet of the simulated bus arrived (a control request at its
 *   owner, or an answer at its requester; see {@link Simulation.peer});
 *   `net.drop`: it was lost; `net.delay`: it was held back (it arrives later,
 *   as `<key>+late`); `net.duplicate`: it arrived and a copy (`<key>+copy`) is in flight;
 * - `point`: an agent passed a `faultPoint(name)` of its code; `point.crash`,
 *   `point.throw`, `point.delay`: it crashed there, an error was thrown
 *   there, or it was held there in virtual time;
 * - `audit.fail`, `audit.hang`, `audit.lose`: an audit append failed, never
 *   completes, or was acknowledged and never kept;
 * - `time`: virtual time was advanced to the earliest timer although other steps
 *   were ready (`timeChoices`), and the timer fired;
 * - `external-await`: an agent's handler waits on a promise the runtime does not control;
 * - `invariant`: an invariant failed after the previous step;
 * - `check`: a scenario's final `check` failed, on the quiescent system (after the last step, not at it).
 */
export type SimulationStepKind =
  | "op"
  | "deliver"
  | "reply"
  | "timer"
  | "store.write"
  | "store.fail"
  | "store.hang"
  | "store.lose"
  | "store.fenced"
  | "audit"
  | "suspend"
  | "resume"
  | "decision"
  | "restart"
  | "crash"
  | "kill"
  | "net"
  | "net.drop"
  | "net.delay"
  | "net.duplicate"
  | "point"
  | "point.crash"
  | "point.throw"
  | "point.delay"
  | "audit.fail"
  | "audit.hang"
  | "audit.lose"
  | "time"
  | "external-await"
  | "invariant"
  | "check";

/**
 * One step of a simulation's trace. `key` names the step in words that
 * survive unrelated code changes (agent names, message types and an ordinal
 * per sender and recipient, never a random id): {@link replay} follows a
 * trace by its keys.
 */
export interface SimulationStep {
  /** Position in the trace, from 0. */
  readonly step: number;
  readonly kind: SimulationStepKind;
  /** The stable key of what happened (`ledger<-coord-a:transfer#1`, `store.set:ledger#3`, `timer@+5000` …). */
  readonly key: string;
  /** The agent concerned. */
  readonly agent?: string;
  /** The sender of the message concerned. */
  readonly from?: string;
  /** The message type (or audit event) concerned. */
  readonly type?: string;
  /** The id of the message concerned (deterministic for a given seed). */
  readonly messageId?: string;
  /** Anything else worth reading (a fault's point, the virtual time, a failed invariant's text). */
  readonly detail?: string;
  /** With `nodes`: the node the step happened on (`"main"` for the root's runtime). */
  readonly node?: string;
}

/** What a chooser chooses among: one thing the runtime is ready to do next. */
export interface SimulationChoice {
  /** What it is. */
  readonly kind: "deliver" | "reply" | "store" | "audit" | "net" | "point" | "time";
  /** Its stable key, as the trace will record it. */
  readonly key: string;
  /**
   * The "thread" it belongs to, for strategies that prioritise threads (PCT):
   * the agent's name for a delivery, the asker's for a reply, `"store"` and
   * `"audit"` for the store and the audit log, `"net:<subject>"` for a packet of the simulated bus,
   * the agent's for a fault point, `"time"` for advancing time.
   */
  readonly thread: string;
  /** The agent concerned. */
  readonly agent?: string;
  /** The sender of the message concerned. */
  readonly from?: string;
  /** The message type (or audit event, or store operation) concerned. */
  readonly type?: string;
}

/** Faults a chooser may be asked to inject at a choice. */
export type SimulationFaultKind =
  | "kill"
  | "crash"
  | "store.fail"
  | "store.hang"
  | "store.lose"
  | "store.fenced"
  | "net.drop"
  | "net.delay"
  | "net.duplicate"
  | "point.crash"
  | "point.throw"
  | "point.delay"
  | "audit.fail"
  | "audit.hang"
  | "audit.lose";

/**
 * A fault placed where it is wanted rather than drawn: `fault` applies at
 * every step that matches the other fields (all that are given), or only at
 * the `occurrence`-th such step. Matching needs the fault to be possible
 * there (a `crash` at a business delivery or a store write, a `point.*` at a
 * fault point, a `store.*` at a store write, an `audit.*` at an audit
 * append; a `kill` anywhere). Targeted faults are decided, not drawn: every
 * chooser, `exhaust` included, sees them at the same steps.
 * @example
 * ```ts
 * faults: { targets: [{ fault: "crash", agent: "bob", type: "credit", occurrence: 1 }, { fault: "point.crash", point: "between-sends" }] }
 * ```
 */
export interface SimulationFaultTarget {
  /** The fault to inject. */
  readonly fault: SimulationFaultKind;
  /** Only at steps of this agent (the recipient of a delivery, the writer of a store write, the agent of an audit event or fault point). */
  readonly agent?: string;
  /** Only for this message type (a delivery), store operation (`set`, `delete`) or audit event (`agent.resume` …). */
  readonly type?: string;
  /** Only at the fault point of this name. */
  readonly point?: string;
  /** Only at the n-th matching step (from 1). @defaultValue every matching step */
  readonly occurrence?: number;
}

/**
 * Decides, at every scheduling point of a simulation, what happens next.
 * `choose` returns the index (in `ready`) of what runs; `ready` is never
 * empty. `fault` answers whether a fault of `kind` applies to the choice
 * just made (asked only where the simulation's `faults` give that kind a
 * probability above 0, `probability` being that number): faults then come
 * from the same seed or scheduler as the choices.
 */
export interface Chooser {
  choose(ready: readonly SimulationChoice[], step: number): number | Promise<number>;
  fault?(choice: SimulationChoice, kind: SimulationFaultKind, probability: number, step: number): boolean | Promise<boolean>;
}

/** Probabilities (0–1) of each fault, per eligible step. All default to 0. */
export interface SimulationFaults {
  /**
   * For each store write (`set`/`delete`): it fails (`STORE_UNAVAILABLE`),
   * hangs (never completes), is lost (acknowledged, gone after the next
   * kill), or is fenced: refused with the `StateFencedError`
   * (`STATE_FENCED`) a shared store such as `PostgresStateStore` raises when
   * another process took the agent over. A fenced write changes nothing, and
   * the takeover lasts: every later write of that agent in the same runtime
   * is refused the same way (a `store.fenced` step), until a kill, whose
   * rebuilt runtime owns it again. The store is fenced as
   * `PostgresStateStore.fenced` is: each incarnation writes with its own
   * fence (1, then 3, 5 … after each kill), stamped on its receipts; the
   * takeover puts the successor's `agent.claimed` (the next fence) on the
   * log, so a receipt the fenced-out incarnation appends after it decides
   * nothing. The error's `fence` is the runtime's, its `currentFence` the successor's.
   */
  readonly storeWrites?: { readonly fail?: number; readonly hang?: number; readonly lose?: number; readonly fenced?: number };
  /**
   * For each business delivery, `_agency.resume` delivery and store write: the
   * agent crashes there (its handler throws, its `onResume` throws, its write
   * fails before or after being applied).
   */
  readonly crashes?: number;
  /** For each step: the process is killed instead, and the runtime rebuilt from the store. */
  readonly kills?: number;
  /**
   * For each packet of the simulated bus (a control request of
   * {@link Simulation.peer} to the owner's `civitas.ctl.<name>`, an answer
   * back): it is dropped (lost in transit), delayed (held back `delayMs` of
   * virtual time, while other packets on any subject overtake it), or
   * duplicated (delivered, and a copy is in flight). `delayMs` defaults to
   * 1500, more than a request attempt's 1 s, so a delayed answer arrives after
   * its requester sent the request again.
   */
  readonly network?: { readonly drop?: number; readonly delay?: number; readonly duplicate?: number; readonly delayMs?: number };
  /**
   * For each `faultPoint(name)` an agent passes: it crashes there (the point
   * rejects with `SIMULATED_CRASH`), an error is thrown there that the
   * handler may handle (`SIMULATED_FAULT`), or it is held `delayMs` of
   * virtual time (default 1000) while others run. With this option (or a
   * target naming a point) each point is a step; without, a point does nothing.
   */
  readonly points?: { readonly crash?: number; readonly throw?: number; readonly delay?: number; readonly delayMs?: number };
  /**
   * For each audit append: it fails (the sink rejects; a resume or deny is
   * refused with `AUDIT_UNAVAILABLE`), hangs (never completes), or is
   * acknowledged and never kept (it is not in `view.audit`, nor after a kill).
   */
  readonly auditAppends?: { readonly fail?: number; readonly hang?: number; readonly lose?: number };
  /** Faults at chosen steps, decided rather than drawn; see {@link SimulationFaultTarget}. */
  readonly targets?: readonly SimulationFaultTarget[];
}

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
  /** Other runtimes (nodes) of the simulated system, joined to the main one (`root`, node `"main"`) by the simulated bus; see {@link Simulation.node}. @defaultValue none */
  readonly nodes?: SimulationNodes;
}

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
