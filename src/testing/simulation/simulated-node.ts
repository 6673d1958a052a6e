import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { silentLogger } from "../../logging/logger.js";
import type { Message } from "../../message/message.js";
import type { RuntimeOptions } from "../../runtime/runtime-options.js";
import { Runtime } from "../../runtime/runtime.js";
import { buildSimulated, type SimulationHooks } from "../../runtime/simulation-hooks.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import type { ProcessStatus } from "../../contracts/process-status.js";
import type { Gate, GateBoard } from "./gate.js";
import { replyGate } from "./reply-gate.js";
import { AuditLog, SimulatedAuditSink } from "./simulated-audit-sink.js";
import type { Clock } from "../../time/clock.js";
import type { SimulatedClock } from "./simulated-clock.js";
import { BUS_EPOCH, type SimulatedNetwork } from "./simulated-network.js";
import { disarmCrash, SimulatedScheduler, type DeliveryOrdinals } from "./simulated-scheduler.js";
import { DurableData, SimulatedStore } from "./simulated-store.js";
import { agentSubject, SimulatedTransport } from "./simulated-transport.js";
import { SimulationOperations } from "./simulation-operations.js";
import { EngineView } from "./simulation-view.js";
import type { SimulationNode, SimulationNodes } from "./simulation-node.js";
import type { Simulation, SimulationView } from "./types.js";

/** What the simulation engine lends its nodes. @internal */
export interface NodeHost {
  readonly board: GateBoard;
  readonly network: SimulatedNetwork;
  readonly clock: SimulatedClock;
  readonly deliveries: DeliveryOrdinals;
  readonly replies: Map<string, number>;
  readonly runtime: Omit<RuntimeOptions, "root" | "clock" | "store" | "auditSink" | "keepAlive" | "transport"> | undefined;
  readonly putWait: SimulationHooks["putWait"];
  /** The view of a node by name. */
  readonly view: (name: string) => SimulationView;
  transition(agent: string, from: ProcessStatus, to: ProcessStatus): void;
  /** Records a user operation on `node` (refused when the simulation is not running). */
  operate(node: string, operation: string, agent: string, type: string, detail?: string): void;
  /** Kills `node`, keeps it down `downMs`, restarts it: the engine runs the steps meanwhile. */
  kill(node: SimulatedNode, downMs: number | undefined): Promise<void>;
}

/**
 * A node of a simulation other than the main runtime: its own runtime,
 * store, audit log and transport on the shared bus, scheduler and clock.
 * Its gates go on the engine's board under the node's current epoch (a
 * negative number, unique among every node's incarnations), so a kill of
 * the node lets go of exactly its own.
 * @internal
 */
export class SimulatedNode extends SimulationOperations implements SimulationNode {
  readonly data = new DurableData();
  readonly log = new AuditLog();
  readonly view: SimulationView;
  readonly group: string;
  /** The engine's epoch of the current incarnation. */
  epoch = 0;
  /** The current incarnation, from 0. */
  private incarnation = -1;
  runtime: Runtime | undefined;
  scheduler: SimulatedScheduler | undefined;
  /** Whether the current incarnation waits out a drawn kill's downtime (built, not started): a kill does not hit it again. */
  down = false;
  /** The current incarnation's start, once asked for (after a drawn kill: when its downtime is over). */
  private ready: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly root: SimulationNodes[string],
    private readonly host: NodeHost,
  ) {
    super();
    this.group = `node:${name}`;
    this.view = new EngineView(() => this.runtime, this.data, this.log, host.clock, host.view);
  }

  /** Builds the next incarnation under the engine epoch `epoch` (not started). */
  build(epoch: number): void {
    this.epoch = epoch;
    this.down = false;
    this.ready = undefined;
    const incarnation = ++this.incarnation;
    const host = this.host;
    const clock = host.clock.grouped(this.group);
    // The store, sink and scheduler count their own incarnations; their gates go on the board under the node's epoch.
    const board: GateBoard = { add: (gate: Gate) => host.board.add(gate, epoch), touch: (what) => host.board.touch(what) };
    const scheduler = new SimulatedScheduler(board, incarnation, host.deliveries);
    this.scheduler = scheduler;
    const hooks: SimulationHooks = { scheduler, settleReply: (reply: Message, settle: () => void) => board.add(replyGate(host.replies, reply, settle), epoch), putWait: host.putWait };
    const runtime = buildSimulated(
      hooks,
      () =>
        new Runtime({
          logger: silentLogger,
          ...host.runtime,
          root: this.root(),
          clock,
          store: new SimulatedStore(this.data, board, incarnation, this.log),
          auditSink: new SimulatedAuditSink(this.log, board, incarnation),
          transport: new SimulatedTransport(host.network, epoch, clock, this.name, incarnation),
          keepAlive: false,
        }),
    );
    runtime.on("agent.status", (agent, from, to) => host.transition(agent, from, to));
    this.runtime = runtime;
  }

  /** The current incarnation's start: started now, unless a drawn kill's downtime holds it (then when it is over). */
  up(): Promise<void> {
    this.ready ??= (this.runtime as Runtime).start();
    return this.ready;
  }

  /**
   * Starts the current incarnation (just built after a drawn kill) once
   * `downMs` of virtual time passed on `clock` — unless it was replaced
   * meanwhile, or `running()` no longer holds (the simulation stops).
   */
  upAfter(downMs: number, clock: Clock, running: () => boolean): void {
    if (!running()) return; // killed while the simulation stops: the successor is stopped, never started
    if (downMs > 0) {
      this.down = true;
      const runtime = this.runtime as Runtime;
      this.ready = new Promise<void>((resolve) => clock.setTimeout(() => resolve(), downMs)).then(() => {
        if (this.runtime !== runtime) return undefined; // the test killed it again meanwhile: its successor starts itself
        this.down = false;
        return running() ? runtime.start() : undefined;
      });
    }
    this.up().catch(() => undefined); // a failed start shows in the trace; the run goes on with what is left
  }

  /** Forgets the current incarnation's memory (kill -9): what the store did not keep, its crashes armed. */
  forget(): void {
    for (const r of this.scheduler?.runners.values() ?? []) disarmCrash(r, true);
    this.data.restart();
  }

  runner(name: string): ProcessRunner | undefined {
    return this.scheduler?.runners.get(name);
  }

  kill(options: { downMs?: number } = {}): Promise<void> {
    return this.host.kill(this, options.downMs);
  }

  protected override operate(operation: string, agent: string, type: string, detail?: string): Runtime {
    this.host.operate(this.name, operation, agent, type, detail);
    return this.runtime as Runtime;
  }
}

/**
 * The nodes of a simulation beside its main runtime, and the epochs of
 * their gates: which gates a kill of the main runtime keeps (the nodes',
 * and business packets in flight), which a kill of one node lets go.
 * @internal
 */
export class SimulatedNodes {
  readonly list: SimulatedNode[] = [];
  private readonly byName = new Map<string, SimulatedNode>();
  private readonly epochs = new WeakMap<Gate, number>();
  private next = -1;

  constructor(
    nodes: SimulationNodes,
    private readonly host: NodeHost,
  ) {
    for (const [name, root] of Object.entries(nodes)) {
      const node = new SimulatedNode(name, root, host);
      this.list.push(node);
      this.byName.set(name, node);
    }
  }

  get(name: string): SimulatedNode | undefined {
    return this.byName.get(name);
  }

  /** A fresh engine epoch for a node's next incarnation. */
  nextEpoch(): number {
    return this.next--;
  }

  /** Whether `epoch` is a node's current incarnation, or a business packet's. */
  live(epoch: number): boolean {
    return epoch === BUS_EPOCH || this.list.some((n) => n.epoch === epoch);
  }

  /** Takes `gate` of epoch `epoch` on the board when the epoch is live (remembering it); `false` when it is stale. */
  adopt(gate: Gate, epoch: number): boolean {
    if (!this.live(epoch)) return false;
    this.epochs.set(gate, epoch);
    return true;
  }

  /** The gates a kill of the main runtime keeps: the nodes' and the bus's. */
  survivors(gates: readonly Gate[]): Gate[] {
    return gates.filter((g) => this.epochs.has(g));
  }

  /** The gates a kill of the node of epoch `epoch` keeps. */
  without(gates: readonly Gate[], epoch: number): Gate[] {
    return gates.filter((g) => this.epochs.get(g) !== epoch);
  }

  /** The epoch of the node whose runtime runs agent `name`, or `undefined` (the main runtime's, or nobody's). */
  epochOf(name: string | undefined): number | undefined {
    if (name === undefined) return undefined;
    for (const node of this.list) if (node.runner(name) !== undefined) return node.epoch;
    return undefined;
  }

  runner(name: string): ProcessRunner | undefined {
    for (const node of this.list) {
      const r = node.runner(name);
      if (r !== undefined) return r;
    }
    return undefined;
  }

  /** The node an agent (or a reply address `_reply.<node>.<n>`) lives on: `"main"` when no other node hosts it. */
  nodeOf(agent: string | undefined): string {
    if (agent === undefined) return "main";
    if (agent.startsWith("_reply.")) return agent.slice(7, agent.lastIndexOf("."));
    for (const node of this.list) if (node.runtime?.getAgent(agent) !== undefined) return node.name;
    // A node that is down hosts nothing now: the bus still knows whose the agent's subject was.
    const subscriber = this.host.network.nodeOf(agentSubject(agent));
    return subscriber !== undefined && this.byName.get(subscriber)?.down === true ? subscriber : "main";
  }
}

/** The main runtime of `sim` as a {@link SimulationNode}: the simulation's own calls. @internal */
export function mainNode(sim: Simulation): SimulationNode {
  return {
    name: "main",
    view: sim.view,
    kill: (options) => sim.kill(options),
    send: (...a) => sim.send(...a),
    ask: (...a) => sim.ask(...a),
    suspend: (...a) => sim.suspend(...a),
    resume: (...a) => sim.resume(...a),
    deny: (...a) => sim.deny(...a),
    approve: (...a) => sim.approve(...a),
    denyApproval: (...a) => sim.denyApproval(...a),
  };
}

/** A kill's `downMs`, checked: a non-negative number of milliseconds (0 when not given). @internal */
export function checkDownMs(call: string, downMs: number | undefined = 0): number {
  if (typeof downMs === "number" && Number.isFinite(downMs) && downMs >= 0) return downMs;
  throw new InvalidArgumentError("downMs", `sim.${call.replace("()", "")}({ downMs }): downMs must be a non-negative number of milliseconds, got ${describeValue(downMs)}`);
}

/** The node a timer of clock group `group` belongs to, for the trace: a node's, the main runtime's, or none (`outside`: the peer's, a kill's downtime). @internal */
export function nodeOfTimer(group: string | undefined): { node?: string } {
  if (group === undefined) return { node: "main" };
  return group.startsWith("node:") ? { node: group.slice(5) } : {};
}
