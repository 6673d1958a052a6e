import { InvalidArgumentError } from "../../errors/errors.js";
import { silentLogger } from "../../logging/logger.js";
import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import { Runtime } from "../../runtime/runtime.js";
import { buildSimulated } from "../../runtime/simulation-hooks.js";
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
import { replyGate } from "./reply-gate.js";
import { SimulatedAuditSink, AuditLog } from "./simulated-audit-sink.js";
import { SimulatedClock } from "./simulated-clock.js";
import { SimulatedNetwork } from "./simulated-network.js";
import { checkDownMs, mainNode, nodeOfTimer, SimulatedNodes, type SimulatedNode } from "./simulated-node.js";
import type { SimulationNode } from "./simulation-node.js";
import { SimulatedPeer } from "./simulated-peer.js";
import { SimulatedTransport } from "./simulated-transport.js";
import { disarmCrash, SimulatedScheduler, type DeliveryOrdinals } from "./simulated-scheduler.js";
import { DurableData, SimulatedStore } from "./simulated-store.js";
import { SimulationFailure, SimulationStateError, type SimulationFailureCode } from "./simulation-failure.js";
import { SimulationOperations } from "./simulation-operations.js";
import { claimProcess, releaseProcess } from "./process-claim.js";
import { StallDetection } from "./stall-detection.js";
import { TargetedFaults } from "./targeted-faults.js";
import { TimeChoices } from "./time-choices.js";
import { formatTrace } from "./trace-format.js";
import { EngineView } from "./simulation-view.js";
import type { Simulation, SimulationChoice, SimulationPeer, SimulationStep, SimulationView } from "./types.js";

/**
 * The simulation engine: owns the runtime it builds, the ready set of
 * gates, virtual time, the trace, and chooses every step.
 */
export class SimulationEngine extends SimulationOperations implements Simulation, GateBoard {
  private readonly steps: SimulationStep[] = [];
  private gates: Gate[] = [];
  private epoch = 0;
  private readonly clock: SimulatedClock;
  private readonly data = new DurableData();
  private readonly log = new AuditLog();
  private readonly deliveries: DeliveryOrdinals = new Map();
  /** Replies so far per sender and recipient: each reply gate's key counts them. */
  private readonly replies = new Map<string, number>();
  private scheduler: SimulatedScheduler | undefined;
  private runtime: Runtime | undefined;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private phase: "new" | "running" | "ended" = "new";
  private readonly builtIn: BuiltInInvariants;
  private readonly external = new ExternalAwaits();
  /** Agents whose code waits for room in a full mailbox: waits on the runtime (the step that makes room is chosen). */
  private readonly puts: PutWaits;
  /** Set when a step ended with a drain and nothing ran since: the next collect() need not drain again. */
  private drained = false;
  readonly view: SimulationView;
  /** The bus between this runtime and {@link SimulationEngine.peer}: control across processes. */
  private readonly network: SimulatedNetwork;
  readonly peer: SimulationPeer;
  /** The other runtimes, with `nodes`. */
  private readonly nodes: SimulatedNodes | undefined;
  private readonly targets: TargetedFaults;
  private readonly points: FaultPoints;
  private readonly time: TimeChoices;
  /** What each step touches, when the chooser wants to know (the reduced search of `exhaust`). */
  private readonly recorder: FootprintRecorder | undefined;
  /** Deadlocks, and handlers that wait on what the simulation does not control. */
  private readonly stalls: StallDetection;

  constructor(
    private readonly options: CheckedOptions,
    private readonly expected: readonly SimulationStep[] | undefined,
  ) {
    super();
    this.clock = new SimulatedClock(options.startMs);
    this.puts = new PutWaits(
      (name) => this.scheduler?.runners.has(name) === true || this.nodes?.runner(name) !== undefined,
      () => this.clock.owner,
    );
    this.builtIn = new BuiltInInvariants(this.log);
    this.view = new EngineView(() => this.runtime, this.data, this.log, this.clock, (name) => this.node(name).view);
    this.network = new SimulatedNetwork(this, () => this.epoch, this.clock, this.clock.outside(), options.networkDelayMs, (epoch) => epoch === this.epoch || this.nodes?.live(epoch) === true);
    this.targets = new TargetedFaults(options.targets);
    this.recorder = listensToFootprints(options.chooser) ? new FootprintRecorder() : undefined;
    this.time = new TimeChoices(this.clock, options.time.stepLatencyMs, options.time.races);
    // A point passed by a node's agent belongs to that node's incarnation: a kill of the node lets it go.
    this.points = new FaultPoints(this, () => this.nodes?.epochOf(this.clock.owner) ?? this.epoch, this.clock, options.pointDelayMs);
    this.stalls = new StallDetection({
      runners: () => this.scheduler?.runners,
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

  get trace(): readonly SimulationStep[] {
    return this.steps;
  }

  formatTrace(mark?: number): string {
    return formatTrace(this.steps, mark);
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

  start(): Promise<void> {
    this.starting ??= this.begin();
    return this.starting;
  }


  async run(): Promise<void> {
    this.requireRunning("run()");
    this.drained = false;
    while ((await this.step(true)) === "stepped");
  }

  async idle(): Promise<void> {
    this.requireRunning("idle()");
    this.drained = false;
    while ((await this.step(false)) === "stepped");
  }

  async kill(options: { downMs?: number } = {}): Promise<void> {
    const downMs = this.killing("kill()", options.downMs);
    this.record({ kind: "kill", key: "op:kill", ...(this.nodes === undefined ? {} : { node: "main" }), detail: `kill -9 by the test${downMs > 0 ? `, down for ${downMs} ms` : ""}` });
    this.rebuild();
    await this.down(downMs);
    await this.untilStarted("the runtime's start after the kill");
  }

  node(name: string): SimulationNode {
    const node = this.nodes?.get(name);
    if (node !== undefined) return node;
    if (name === "main") return mainNode(this);
    throw new InvalidArgumentError("name", `sim.node('${name}'): no such node; the nodes are main${Object.keys(this.options.nodes ?? {}).map((n) => `, ${n}`).join("")}`);
  }

  partition(a: string, b: string): void {
    this.operate(`partition:${a}|${b}`, a, "partition", b);
    this.network.cut(a, b);
  }

  heal(a: string, b: string): void {
    this.operate(`heal:${a}|${b}`, a, "heal", b);
    this.network.heal(a, b);
  }

  /** Checks a kill's `downMs` (and that the simulation runs); its value. */
  private killing(call: string, downMs: number | undefined): number {
    this.requireRunning(call);
    return checkDownMs(call, downMs);
  }

  /** Runs the steps of `downMs` of virtual time: the killed runtime is down meanwhile (nobody answers its subjects), the rest goes on. */
  private async down(downMs: number): Promise<void> {
    this.drained = false;
    if (downMs > 0) await this.runUntil(new Promise((resolve) => this.clock.outside().setTimeout(() => resolve(undefined), downMs)), "the kill's downtime");
  }

  /** Kills node `node` alone: its gates, timers and memory go; the other nodes go on. */
  private async killNode(node: SimulatedNode, downMs: number | undefined): Promise<void> {
    const ms = this.killing(`node('${node.name}').kill()`, downMs);
    this.record({ kind: "kill", key: `op:${node.name}/kill`, node: node.name, detail: `kill -9 of node ${node.name} by the test${ms > 0 ? `, down for ${ms} ms` : ""}` });
    const nodes = this.nodes as SimulatedNodes;
    this.gates = nodes.without(this.gates, node.epoch);
    this.clock.clearGroup(node.group);
    node.forget();
    node.build(nodes.nextEpoch());
    await this.down(ms);
    await this.runUntil(node.runtime?.start() ?? Promise.resolve(), `node ${node.name}'s start after the kill`);
  }

  stop(): Promise<void> {
    if (this.phase !== "running") return Promise.resolve();
    this.stopping ??= (async () => {
      this.record({ kind: "op", key: "op:stop", type: "stop" });
      for (const node of this.nodes?.list ?? []) await this.runUntil(node.runtime?.stop() ?? Promise.resolve(), `node ${node.name}'s runtime.stop()`);
      // A kill drawn meanwhile replaces the runtime: then its successor is stopped.
      for (;;) {
        const epoch = this.epoch;
        const stopped = (this.runtime as Runtime).stop();
        await this.runUntil(stopped, "runtime.stop()", () => this.epoch !== epoch);
        if (this.epoch !== epoch) continue;
        await stopped;
        break;
      }
      this.end();
    })();
    return this.stopping;
  }

  private async begin(): Promise<void> {
    claimProcess(this, this.options.points ? this.points.hook : undefined, () => this.clock.now());
    this.phase = "running";
    try {
      this.build();
    } catch (error) {
      this.end(); // a root that cannot be built (duplicate names…) ends the simulation: the next one may start
      throw error;
    }
    await this.untilStarted("runtime.start()");
    for (const node of this.nodes?.list ?? []) {
      node.build(this.nodes?.nextEpoch() as number);
      await this.runUntil(node.runtime?.start() ?? Promise.resolve(), `node ${node.name}'s runtime.start()`);
    }
  }

  /** Runs steps until the current runtime has started; a kill meanwhile (a fault) replaces it, and its successor's start is awaited instead. */
  private async untilStarted(what: string): Promise<void> {
    for (;;) {
      const epoch = this.epoch;
      await this.runUntil(this.restarted(), what, () => this.epoch !== epoch);
      if (this.epoch === epoch) return;
    }
  }

  /** The current runtime's start, rejected errors kept for whoever awaits it. */
  private restarted(): Promise<void> {
    return (this.runtime as Runtime).start();
  }

  private build(): void {
    const epoch = this.epoch;
    const scheduler = new SimulatedScheduler(this, epoch, this.deliveries);
    this.scheduler = scheduler;
    const hooks = { scheduler, settleReply: (reply: Message, settle: () => void) => this.add(replyGate(this.replies, reply, settle), epoch), putWait: this.puts.watch };
    const runtime = buildSimulated(
      hooks,
      () =>
        new Runtime({
          logger: silentLogger,
          ...this.options.runtime,
          root: this.options.root(),
          clock: this.clock,
          store: new SimulatedStore(this.data, this, epoch, this.log),
          auditSink: new SimulatedAuditSink(this.log, this, epoch),
          transport: new SimulatedTransport(this.network, epoch, this.clock),
          keepAlive: false,
        }),
    );
    runtime.on("agent.status", (agent, from, to) => this.builtIn.transition(agent, from, to));
    this.runtime = runtime;
  }

  /** "kill -9": forgets the runtime, every gate and timer and what the store did not keep; builds the runtime again and starts it. */
  private rebuild(): void {
    for (const r of this.scheduler?.runners.values() ?? []) disarmCrash(r, true);
    this.external.hung.clear();
    this.puts.clear();
    this.epoch++;
    this.gates = this.nodes === undefined ? [] : this.nodes.survivors(this.gates);
    this.clock.clear(true);
    this.data.restart();
    this.builtIn.restart();
    this.build();
  }

  /** Records a user operation; the runtime to call. */
  protected override operate(operation: string, agent: string, type: string, detail?: string, node = "main"): Runtime {
    this.requireRunning(`${operation.split(":")[0] as string}()`);
    this.record({ kind: "op", key: `op:${operation}`, agent, type, ...(detail === undefined ? {} : { detail }), ...(this.nodes === undefined ? {} : { node }) });
    this.drained = false;
    return this.runtime as Runtime;
  }

  private requireRunning(call: string): void {
    if (this.phase === "running" && this.stopping === undefined) return;
    const why = this.phase === "new" ? "call (and await) sim.start() first" : "it has ended (it was stopped, or it failed); build a new one with simulate()";
    throw new SimulationStateError(`sim.${call}: the simulation is not running; ${why}`);
  }

  /** Runs steps, advancing time, until `promise` settles (or `interrupted()`); fails with a deadlock when nothing can make it settle. */
  private async runUntil(promise: Promise<unknown>, what: string, interrupted: () => boolean = () => false): Promise<void> {
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
  private async step(advance: boolean): Promise<"stepped" | "idle"> {
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
    const fault = this.options.faulty ? await chooseFault(this.options, this.targets, gate, choice, this.steps.length) : undefined;
    const agent = choice.agent === undefined ? {} : { agent: choice.agent };
    if (fault === "kill") {
      this.record({ kind: "kill", key: choice.key, ...agent, detail: "fault: the process was killed instead" });
      this.rebuild();
      this.restarted().catch(() => undefined); // a failed start shows in the trace; run() goes on with what is left
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

  /** Every agent that dispatched, of the main runtime and (with `nodes`) of every node: what a footprint compares. */
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
  private record(step: Omit<SimulationStep, "step">): void {
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
  private end(): void {
    if (this.phase === "ended") return;
    this.phase = "ended";
    this.gates = [];
    this.clock.clear();
    releaseProcess(this);
  }
}
