import type { ProcessRunner } from "../../process/process-runner.js";
import type { Runtime } from "../../runtime/runtime.js";
import { BuiltInInvariants, userProblem } from "./built-in-invariants.js";
import type { CheckedOptions } from "./check-options.js";
import { chooseFault } from "./choose-fault.js";
import { drain } from "./drain.js";
import { ExternalAwaits } from "./external-awaits.js";
import { FootprintRecorder, listensToFootprints } from "./footprint.js";
import { FaultPoints } from "./fault-points.js";
import { offersOf, type Gate, type GateBoard, type GateOutcome } from "./gate.js";
import { PutWaits } from "./put-waits.js";
import { recordedDivergence, unreadyDivergence } from "./replay-divergence.js";
import { AuditLog } from "./simulated-audit-sink.js";
import { SimulatedClock } from "./simulated-clock.js";
import { SimulatedNetwork } from "./simulated-network.js";
import { nodeOfTimer, SimulatedNodes, type SimulatedNode } from "./simulated-node.js";
import type { SimulationNode } from "./simulation-node.js";
import { SimulatedPeer } from "./simulated-peer.js";
import { disarmCrash, type SimulatedScheduler, type DeliveryOrdinals } from "./simulated-scheduler.js";
import { DurableData } from "./simulated-store.js";
import { SimulationFailure, SimulationStateError, type SimulationFailureCode } from "./simulation-failure.js";
import { SimulationOperations } from "./simulation-operations.js";
import { releaseProcess } from "./process-claim.js";
import { StallDetection } from "./stall-detection.js";
import { TargetedFaults } from "./targeted-faults.js";
import { TimeChoices } from "./time-choices.js";
import { EngineView } from "./simulation-view.js";
import type { SimulationChoice, SimulationPeer, SimulationStep, SimulationView } from "./types.js";

/**
 * The step loop of a simulation: the ready set of gates, the chooser's pick
 * of each step (and of its fault), virtual time moving to the next timer
 * when nothing else is ready, the invariants checked after every step, and
 * the trace. The lifecycle of the runtimes it steps (start, kill, stop) and
 * the nodes are SimulationEngine's (simulation.ts).
 * @internal
 */
export abstract class SimulationStepper extends SimulationOperations implements GateBoard {
  protected readonly steps: SimulationStep[] = [];
  protected gates: Gate[] = [];
  protected epoch = 0;
  protected readonly clock: SimulatedClock;
  protected readonly data = new DurableData();
  protected readonly log = new AuditLog();
  protected readonly deliveries: DeliveryOrdinals = new Map();
  /** Replies so far per sender and recipient: each reply gate's key counts them. */
  protected readonly replies = new Map<string, number>();
  protected scheduler: SimulatedScheduler | undefined;
  protected runtime: Runtime | undefined;
  protected starting: Promise<void> | undefined;
  protected stopping: Promise<void> | undefined;
  protected phase: "new" | "running" | "ended" = "new";
  protected readonly builtIn: BuiltInInvariants;
  protected readonly external = new ExternalAwaits();
  /** Agents whose code waits for room in a full mailbox: waits on the runtime (the step that makes room is chosen). */
  protected readonly puts: PutWaits;
  /** Set when a step ended with a drain and nothing ran since: the next collect() need not drain again. */
  protected drained = false;
  readonly view: SimulationView;
  /** The bus between this runtime and {@link SimulationEngine.peer}: control across processes. */
  protected readonly network: SimulatedNetwork;
  readonly peer: SimulationPeer;
  /** The other runtimes, with `nodes`. */
  protected readonly nodes: SimulatedNodes | undefined;
  private readonly targets: TargetedFaults;
  protected readonly points: FaultPoints;
  private readonly time: TimeChoices;
  /** What each step touches, when the chooser wants to know (the reduced search of `exhaust`). */
  private readonly recorder: FootprintRecorder | undefined;
  /** Deadlocks, and handlers that wait on what the simulation does not control. */
  private readonly stalls: StallDetection;

  constructor(
    protected readonly options: CheckedOptions,
    private readonly expected: readonly SimulationStep[] | undefined,
  ) {
    super();
    this.clock = new SimulatedClock(options.startMs);
    this.puts = new PutWaits(
      (name) => this.scheduler?.runners.has(name) === true || this.nodes?.runner(name) !== undefined,
      () => this.clock.owner,
    );
    this.builtIn = new BuiltInInvariants(() => [this.log, ...(this.nodes?.list.map((n) => n.log) ?? [])]);
    this.view = new EngineView(() => this.runtime, this.data, this.log, this.clock, (name) => this.node(name).view);
    this.network = new SimulatedNetwork(this, () => this.epoch, this.clock, this.clock.outside(), options.networkDelayMs, options.partitionMs, (epoch) => epoch === this.epoch || this.nodes?.live(epoch) === true);
    this.targets = new TargetedFaults(options.targets);
    this.recorder = listensToFootprints(options.chooser) ? new FootprintRecorder() : undefined;
    this.time = new TimeChoices(this.clock, options.time.stepLatencyMs, options.time.races);
    // A point passed by a node's agent belongs to that node's incarnation: a kill of the node lets it go.
    this.points = new FaultPoints(this, () => this.nodes?.epochOf(this.clock.owner) ?? this.epoch, this.clock, options.pointDelayMs);
    this.stalls = new StallDetection({
      runners: () => (this.scheduler === undefined ? undefined : this.runners()),
      gates: () => this.gates,
      clock: this.clock,
      puts: this.puts,
      external: this.external,
      externalAwaits: options.externalAwaits,
      record: (step) => this.record(step),
      fail: (code, summary) => this.fail(code, summary),
    });
    this.nodes = options.nodes === undefined ? undefined : new SimulatedNodes(options.nodes, {
      board: this, view: (name) => this.node(name).view, network: this.network, clock: this.clock, deliveries: this.deliveries, replies: this.replies, runtime: options.runtime, putWait: this.puts.watch,
      transition: (agent, from, to) => this.builtIn.transition(agent, from, to),
      operate: (node, operation, agent, type, detail) => void this.operate(`${node}/${operation}`, agent, type, detail, node),
      kill: (node, downMs) => this.killNode(node, downMs),
    });
    this.peer = new SimulatedPeer(this.network, this.clock.outside(), (operation, name) => void this.operate(`peer.${operation}:${name}`, name, operation));
  }

  /** @internal */
  add(gate: Gate, epoch: number): void {
    if (this.phase !== "running") return;
    if (epoch === this.epoch || this.nodes?.adopt(gate, epoch) === true) this.gates.push(gate);
  }

  /** @internal */
  touch(what: string): void {
    this.recorder?.touch(what);
  }

  /** The node `name` of `nodes` (`"main"`: the root's runtime); see `Simulation.node`. */
  abstract node(name: string): SimulationNode;

  /** Records a user operation (on node `node`, by default the main runtime); the runtime to call. */
  protected abstract override operate(operation: string, agent: string, type: string, detail?: string, node?: string): Runtime;

  /** Kills node `node` alone (a fault drawn, or the test's `node(name).kill()`). */
  protected abstract killNode(node: SimulatedNode, downMs: number | undefined): Promise<void>;

  /** A kill drawn at `choice` instead of its step: of the main runtime (`node` undefined), or of `node` alone. */
  protected abstract killDrawn(choice: SimulationChoice, node: SimulatedNode | undefined): void;

  /** "kill -9" of the whole process: forgets the runtime and what the store did not keep, and builds it again. */
  protected abstract rebuild(): void;

  /** The current runtime's start, rejected errors kept for whoever awaits it. */
  protected abstract restarted(): Promise<void>;

  protected requireRunning(call: string): void {
    if (this.phase === "running" && this.stopping === undefined) return;
    const why = this.phase === "new" ? "call (and await) sim.start() first" : "it has ended (it was stopped, or it failed); build a new one with simulate()";
    throw new SimulationStateError(`sim.${call}: the simulation is not running; ${why}`);
  }

  /** Runs steps, advancing time, until `promise` settles (or `interrupted()`); fails with a deadlock when nothing can make it settle. */
  protected async runUntil(promise: Promise<unknown>, what: string, interrupted: () => boolean = () => false): Promise<void> {
    let done = false;
    promise.then(
      () => (done = true),
      () => (done = true),
    );
    await drain();
    while (!done && !interrupted()) {
      if ((await this.step(true)) === "idle" && !done && !interrupted()) {
        throw this.fail("SIMULATION_DEADLOCK", `${what} cannot finish: nothing is ready and no timer is left`);
      }
    }
  }

  /** Lets the runtime run until it waits at gates; gates that would do nothing are let go. The offers, in gate order. */
  private async collect(): Promise<SimulationChoice[]> {
    for (;;) {
      if (this.drained) this.drained = false;
      else await drain();
      const offers = offersOf(this.gates);
      if (offers !== undefined) return offers;
    }
  }

  /** One step; `"idle"` when nothing is ready (and, with `advance`, no timer is left either). */
  protected async step(advance: boolean): Promise<"stepped" | "idle"> {
    if (this.phase !== "running") return "idle";
    const offers = await this.collect();
    if (offers.length === 0) return advance ? this.advanceTime() : "idle";
    this.checkStepLimit();
    const racing = advance && this.time.on ? this.time.offer() : undefined;
    if (racing !== undefined) offers.push(racing);
    const index = await this.choose(offers);
    if (this.recorder !== undefined) this.recorder.begin(offers[index], this.runners());
    if (racing !== undefined && index === offers.length - 1) {
      this.time.taken();
      return this.fireTimer("time");
    }
    if (this.time.on) this.time.stepped();
    const gate = this.gates[index];
    const choice = offers[index];
    if (gate === undefined || choice === undefined || !Number.isInteger(index)) {
      if (this.expected !== undefined) throw this.fail("SIMULATION_DIVERGED", unreadyDivergence(this.expected, this.steps.length, offers));
      throw this.fail("SIMULATION_DIVERGED", `the chooser returned ${String(index)}, not an index of the ${offers.length} ready choices`);
    }
    this.gates.splice(index, 1);
    // A kill drawn here hits the process of the step: the main runtime, or (with nodes) the node of its agent, unless that node is down.
    const node = this.nodes?.get(this.nodes.nodeOf(choice.agent));
    const fault = this.options.faulty ? await chooseFault(this.options, this.targets, gate, choice, this.steps.length, node?.down !== true) : undefined;
    if (fault === "kill") {
      this.killDrawn(choice, node);
      return "stepped";
    }
    const watched = choice.kind === "deliver" && choice.agent !== undefined ? this.builtIn.watch(this.scheduler?.runners.get(choice.agent) ?? this.nodes?.runner(choice.agent)) : undefined;
    this.clock.owner = choice.agent;
    const outcome = gate.open(fault);
    if (outcome.kind === "store.hang" && choice.agent !== undefined) this.external.hung.add(choice.agent);
    // The outcome is a fresh object: completed in place into the step (a step is the simulation's hot path).
    const step = outcome as { key: string; agent?: string } & GateOutcome;
    step.key = choice.key;
    if (choice.agent !== undefined) step.agent = choice.agent;
    if (this.nodes !== undefined) (step as { node?: string }).node = this.nodes.nodeOf(choice.agent);
    this.record(step);
    await drain();
    this.clock.owner = undefined;
    if (watched !== undefined) {
      disarmCrash(watched.runner, false);
      this.builtIn.checkDelivery(watched);
    }
    this.stalls.checkExternalAwaits(choice.agent ?? "");
    // A put that got room in this step let its agent's code run on: check it too.
    for (const name of this.puts.settle()) {
      this.touch(`agent:${name}`);
      if (name !== choice.agent) this.stalls.checkExternalAwaits(name);
    }
    this.checkInvariants();
    this.drained = true; // the next step's collect() starts from here
    return "stepped";
  }

  /** The chooser's pick (after telling it, when it listens, what the previous step touched); a chooser that throws ends the simulation. */
  private async choose(offers: readonly SimulationChoice[]): Promise<number> {
    const chooser = this.options.chooser;
    try {
      if (this.recorder !== undefined && listensToFootprints(chooser)) chooser.footprint(this.recorder.end(this.runners()));
      const picked = chooser.choose(offers, this.steps.length);
      return typeof picked === "number" ? picked : await picked;
    } catch (error) {
      this.end();
      throw error;
    }
  }

  /** Every agent that dispatched, of the main runtime and (with `nodes`) of every node (names are unique across nodes): what a footprint compares, what deadlock detection reads. */
  private runners(): ReadonlyMap<string, ProcessRunner> {
    const main = this.scheduler?.runners ?? new Map<string, ProcessRunner>();
    return this.nodes === undefined ? main : new Map([...main, ...this.nodes.list.flatMap((n) => [...(n.scheduler?.runners ?? [])])]);
  }

  /** Refuses a step past `maxSteps`: a run that becomes quiescent after exactly `maxSteps` steps is not cut. */
  private checkStepLimit(): void {
    if (this.steps.length >= this.options.maxSteps) {
      throw this.fail("SIMULATION_STEP_LIMIT", `the simulation took ${this.options.maxSteps} steps without becoming quiescent; raise maxSteps, or look for a livelock in the trace`);
    }
  }

  /** Nothing is ready: a deadlock, or time moves on to the earliest timer. */
  private async advanceTime(): Promise<"stepped" | "idle"> {
    const stalled = await this.stalls.nothingReady();
    if (stalled !== undefined) return stalled;
    this.checkStepLimit();
    return this.fireTimer("timer");
  }

  /** Fires the earliest timer (virtual time moves to it): a `timer` step when nothing else was ready, a `time` step when it raced ready steps. */
  private async fireTimer(kind: "timer" | "time"): Promise<"stepped"> {
    const dueMs = this.clock.nextDueMs as number;
    const detail = `virtual time ${new Date(Math.max(dueMs, this.clock.now())).toISOString()}`;
    const node = this.nodes === undefined ? {} : nodeOfTimer(this.clock.nextGroup);
    this.record(kind === "time" ? { kind, key: "time", detail: `${detail}, while other steps were ready`, ...node } : { kind, key: `timer@+${dueMs - this.options.startMs}`, detail, ...node });
    this.clock.fireNext(); // the timer's callback, and what it sets off until the drain ends, run as its owner's
    await drain();
    this.clock.owner = undefined;
    for (const name of this.puts.settle()) this.touch(`agent:${name}`);
    this.stalls.checkExternalAwaits(undefined);
    this.checkInvariants();
    return "stepped";
  }

  private checkInvariants(): void {
    const problem = this.builtIn.check() ?? userProblem(this.options.invariants, this.view);
    if (problem === undefined) return;
    this.record({ kind: "invariant", key: `invariant:${problem.name}`, detail: problem.text });
    throw this.fail("SIMULATION_INVARIANT", `invariant ${problem.name} failed: ${problem.text}`);
  }

  /** Appends `step` (a fresh object: its number is set on it) to the trace; in a replay, checks it against the saved one. */
  protected record(step: Omit<SimulationStep, "step">): void {
    const recorded = step as { step: number } & SimulationStep;
    recorded.step = this.steps.length;
    this.steps.push(recorded);
    const expected = this.expected;
    if (expected === undefined || this.phase !== "running") return;
    const divergence = recordedDivergence(expected, recorded);
    if (divergence !== undefined) throw this.fail("SIMULATION_DIVERGED", divergence);
  }

  private fail(code: SimulationFailureCode, summary: string): SimulationFailure {
    const failure = new SimulationFailure(code, summary, [...this.steps]);
    this.end();
    return failure;
  }

  /** Ends the simulation: nothing more is chosen; ids are random again; another simulation may start. */
  protected end(): void {
    if (this.phase === "ended") return;
    this.phase = "ended";
    this.gates = [];
    this.clock.clear();
    releaseProcess(this);
  }
}
