import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import type { ExternalAwaits } from "./external-awaits.js";
import type { Gate } from "./gate.js";
import type { PutWaits } from "./put-waits.js";
import type { SimulatedClock } from "./simulated-clock.js";
import type { SimulationFailure, SimulationFailureCode } from "./simulation-failure.js";
import type { SimulationStep } from "./types.js";
import { findCycle, formatChain, waitEdges, type WaitEdge } from "./wait-graph.js";

/**
 * What {@link StallDetection} reads of its simulation: the current runtime's
 * runners, the ready gates, virtual time, puts waiting for room, handlers
 * hung on what the simulation does not control, and how to record and fail.
 * @internal
 */
export interface StallSources {
  /** The runners of the current runtimes by agent name (the main one and, with nodes, every node's); `undefined` before the first is built. */
  readonly runners: () => ReadonlyMap<string, ProcessRunner> | undefined;
  /** The gates ready now. */
  readonly gates: () => readonly Gate[];
  /** Virtual time. */
  readonly clock: SimulatedClock;
  /** Agents whose code waits for room in a full mailbox. */
  readonly puts: PutWaits;
  /** Handlers that await what the simulation does not control. */
  readonly external: ExternalAwaits;
  /** Whether such a handler fails the simulation or is only recorded. */
  readonly externalAwaits: "record" | "fail";
  /** Appends a step to the trace. */
  readonly record: (step: Omit<SimulationStep, "step">) => void;
  /** Ends the simulation, and gives the failure to throw. */
  readonly fail: (code: SimulationFailureCode, summary: string) => SimulationFailure;
}

/**
 * Tells a simulation with nothing ready whether it is stuck: agents that wait
 * on each other (a deadlock), or handlers that await a promise the simulation
 * does not control (recorded, or a failure).
 * @internal
 */
export class StallDetection {
  constructor(private readonly s: StallSources) {}

  /**
   * Nothing is ready: throws a deadlock; after waiting out handlers that await
   * what the simulation does not control, `"stepped"` (a gate came) or
   * `"idle"`; `undefined` when time may move on to the earliest timer.
   */
  async nothingReady(): Promise<"stepped" | "idle" | undefined> {
    const cycle = findCycle(this.waitGraph());
    if (cycle !== undefined) throw this.s.fail("SIMULATION_DEADLOCK", `deadlock: nothing is ready and agents wait on each other: ${formatChain(cycle)}`);
    if (this.s.clock.pending === 0) {
      if (!this.awaitingExternally()) {
        const edges = this.waitGraph();
        if (edges.length > 0) throw this.s.fail("SIMULATION_DEADLOCK", `deadlock: nothing is ready, no timer is left, and agents wait: ${formatChain(edges)}`);
        return "idle";
      }
      // A handler waits on a promise the simulation does not control (reported in the trace): let real time pass.
      await this.s.external.waitOut(() => this.awaitingExternally() && this.s.gates().length === 0);
      return this.s.gates().length > 0 ? "stepped" : "idle";
    }
    return undefined;
  }

  /** Who waits on whom: asks not answered yet, and puts waiting for room, of agents busy in a handler. */
  private waitGraph(): WaitEdge[] {
    const runners = this.s.runners() ?? new Map<string, never>();
    const edges = waitEdges(runners);
    for (const edge of this.s.puts.edges(runners)) edges.push(edge);
    return edges;
  }

  private awaitingExternally(): boolean {
    const runners = this.s.runners();
    return runners !== undefined && this.s.external.awaiting(runners);
  }

  /** Reports each handler that waits on nothing the simulation controls (see {@link ExternalAwaits.check}). */
  checkExternalAwaits(agent: string | undefined): void {
    const runners = this.s.runners();
    if (runners !== undefined) this.s.external.check(runners, agent, this.controlled, this.reportExternal);
  }

  /** Whether a gate or a timer of the agent `name` is pending: what it waits on, the simulation controls. */
  private readonly controlled = (name: string): boolean => this.s.gates().some((g) => g.offer()?.agent === name) || this.s.clock.ownsTimer(name) || this.s.puts.waiting(name);

  private readonly reportExternal = (name: string, message: Message): void => {
    this.s.record({ kind: "external-await", key: `${name}:external#${message.type}`, agent: name, type: message.type, messageId: message.id, detail: "its handler awaits a promise the simulation does not control; it is not raced, it runs when it settles" });
    if (this.s.externalAwaits === "fail") {
      throw this.s.fail("SIMULATION_EXTERNAL_AWAIT", `'${name}' handling ${message.type} awaits a promise the simulation does not control (a timer, I/O, a promise of your own); use the runtime's clock and messages, or pass externalAwaits: "record"`);
    }
  };
}
