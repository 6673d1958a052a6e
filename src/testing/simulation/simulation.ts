import { InvalidArgumentError } from "../../errors/errors.js";
import { silentLogger } from "../../logging/logger.js";
import type { Message } from "../../message/message.js";
import { Runtime } from "../../runtime/runtime.js";
import { buildSimulated } from "../../runtime/simulation-hooks.js";
import { replyGate } from "./reply-gate.js";
import { SimulatedAuditSink } from "./simulated-audit-sink.js";
import { checkDownMs, mainNode, type SimulatedNodes, type SimulatedNode } from "./simulated-node.js";
import type { SimulationNode } from "./simulation-node.js";
import { SimulatedTransport } from "./simulated-transport.js";
import { disarmCrash, SimulatedScheduler } from "./simulated-scheduler.js";
import { SimulatedStore } from "./simulated-store.js";
import { SimulationStepper } from "./simulation-stepper.js";
import { claimProcess } from "./process-claim.js";
import { formatTrace } from "./trace-format.js";
import type { Simulation, SimulationChoice, SimulationStep } from "./types.js";

/**
 * The simulation engine: the lifecycle of the runtimes it builds (start,
 * kill of the whole process or of one node, stop), its nodes and the links
 * between them, and the calls a test makes; the steps themselves are
 * chosen and run by {@link SimulationStepper}.
 */
export class SimulationEngine extends SimulationStepper implements Simulation {
  get trace(): readonly SimulationStep[] {
    return this.steps;
  }

  formatTrace(mark?: number): string {
    return formatTrace(this.steps, mark);
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
  protected override async killNode(node: SimulatedNode, downMs: number | undefined): Promise<void> {
    const ms = this.killing(`node('${node.name}').kill()`, downMs);
    this.record({ kind: "kill", key: `op:${node.name}/kill`, node: node.name, detail: `kill -9 of node ${node.name} by the test${ms > 0 ? `, down for ${ms} ms` : ""}` });
    this.replace(node);
    node.down = ms > 0;
    await this.down(ms);
    node.down = false;
    await this.untilNodeStarted(node, `node ${node.name}'s start after the kill`);
  }

  /** A kill drawn at `choice`: of the main runtime (rebuilt and started at once), or of `node` alone (down `faults.killDownMs`, then started). */
  protected override killDrawn(choice: SimulationChoice, node: SimulatedNode | undefined): void {
    const agent = choice.agent === undefined ? {} : { agent: choice.agent };
    if (node === undefined) {
      this.record({ kind: "kill", key: choice.key, ...agent, ...(this.nodes === undefined ? {} : { node: "main" }), detail: "fault: the process was killed instead" });
      this.rebuild();
      this.restarted().catch(() => undefined); // a failed start shows in the trace; run() goes on with what is left
      return;
    }
    const ms = this.options.killDownMs;
    this.record({ kind: "kill", key: choice.key, ...agent, node: node.name, detail: `fault: node ${node.name} was killed instead${ms > 0 ? `, down for ${ms} ms` : ""}` });
    this.replace(node);
    this.drained = false;
    node.upAfter(ms, this.clock.outside(), () => this.phase === "running" && this.stopping === undefined);
  }

  /** "kill -9" of `node` alone: its gates, timers and memory go; its next incarnation is built (not started). */
  private replace(node: SimulatedNode): void {
    const nodes = this.nodes as SimulatedNodes;
    this.gates = nodes.without(this.gates, node.epoch);
    this.clock.clearGroup(node.group);
    node.forget();
    node.build(nodes.nextEpoch());
  }

  /** Runs steps until `node`'s current incarnation has started; a kill of it meanwhile (a fault) replaces it, and its successor's start is awaited instead. */
  private async untilNodeStarted(node: SimulatedNode, what: string): Promise<void> {
    for (;;) {
      const epoch = node.epoch;
      await this.runUntil(node.up(), what, () => node.epoch !== epoch);
      if (node.epoch === epoch) return;
    }
  }

  stop(): Promise<void> {
    if (this.phase !== "running") return Promise.resolve();
    this.stopping ??= (async () => {
      this.record({ kind: "op", key: "op:stop", type: "stop" });
      // A kill of a node drawn while it stops replaces it: then its successor (built, never started) is stopped.
      for (const node of this.nodes?.list ?? []) {
        for (;;) {
          const epoch = node.epoch;
          await this.runUntil(node.runtime?.stop() ?? Promise.resolve(), `node ${node.name}'s runtime.stop()`, () => node.epoch !== epoch);
          if (node.epoch === epoch) break;
        }
      }
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
      await this.untilNodeStarted(node, `node ${node.name}'s runtime.start()`);
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
  protected override restarted(): Promise<void> {
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
  protected override rebuild(): void {
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
}
