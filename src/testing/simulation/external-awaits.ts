import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import { waitEdges, type WaitEdge } from "./wait-graph.js";

/** How long, in real time, a quiescent simulation waits for handlers that await promises it does not control. */
const EXTERNAL_WAIT_MS = 2_000;

/**
 * Which handlers wait on a promise the simulation does not control (a real
 * timer, I/O, a promise of the test's own): no gate, timer or ask of their
 * agent can make them go on, so they are reported, not raced.
 * @internal
 */
export class ExternalAwaits {
  /** Messages whose handler was reported awaiting a promise the runtime does not control. */
  private readonly external = new WeakSet<Message>();
  /** Agents with a store write that hangs: their handler waits on the runtime, not on something external. */
  readonly hung = new Set<string>();

  /** Whether a handler now running was reported waiting on something external. */
  awaiting(runners: ReadonlyMap<string, ProcessRunner>): boolean {
    for (const r of runners.values()) if (r.current !== undefined && this.external.has(r.current)) return true;
    return false;
  }

  /** Lets real time pass, a millisecond at a time, while `waiting()` holds, for at most `EXTERNAL_WAIT_MS`. */
  async waitOut(waiting: () => boolean): Promise<void> {
    const until = Date.now() + EXTERNAL_WAIT_MS;
    while (waiting() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  /**
   * Reports (through `report`, which may throw) each handler that newly waits
   * on nothing the simulation controls: not `controlled` (a gate or timer of
   * its agent), and no ask of its agent. Only the code of the step's agent ran
   * in a step (`agent`); after a timer (`undefined`), anyone's may have.
   */
  check(runners: ReadonlyMap<string, ProcessRunner>, agent: string | undefined, controlled: (name: string) => boolean, report: (name: string, message: Message) => void): void {
    let edges: WaitEdge[] | undefined;
    for (const [name, r] of agent === undefined ? runners : [[agent, runners.get(agent)] as const]) {
      const message = r?.current;
      if (message === undefined || this.external.has(message) || this.hung.has(name)) continue;
      if (controlled(name)) continue;
      edges ??= waitEdges(runners);
      if (edges.some((e) => e.from === name)) continue;
      this.external.add(message);
      report(name, message);
    }
  }
}
