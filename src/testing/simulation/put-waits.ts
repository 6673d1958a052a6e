import type { Mailbox } from "../../mailbox/mailbox.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import type { WaitingPut } from "../../mailbox/mailbox-options.js";
import type { WaitEdge } from "./wait-graph.js";

/** An agent whose code waits for room in a full mailbox. */
interface PutWait {
  readonly agent: string;
  readonly mailbox: Mailbox;
  readonly put: WaitingPut;
}

/**
 * The puts waiting for room in a full mailbox, by the agent whose code waits
 * (a handler's `send`, a loop delivering a handler's result). Such a wait
 * ends when the recipient takes a message — a step the simulation chooses —
 * so it is a wait on the runtime, never an external await, and it is an edge
 * of the wait graph (agents each waiting to put into the other's full
 * mailbox are a deadlock).
 * @internal
 */
export class PutWaits {
  private waits: PutWait[] = [];

  /**
   * @param isAgent - whether a name is an agent of the simulated runtime.
   * @param acting - the agent whose step runs now, if any.
   */
  constructor(
    private readonly isAgent: (name: string) => boolean,
    private readonly acting: () => string | undefined,
  ) {}

  /**
   * The mailboxes' hook (`putWait` of the simulation hooks): called when
   * `put` begins to wait in `mailbox`. The waiting agent is the message's
   * sender when that is an agent (its `send`, `ask`, or a result its loop
   * delivers): the code of an agent whose put got room runs on in the step
   * of the agent that made the room, so the step's agent may be another.
   * A message the runtime composed (`runtime.send` called in a handler;
   * sender `_runtime`) is the step's agent's; outside a step (the test's own
   * `sim.send`) nobody waits.
   */
  readonly watch = (mailbox: Mailbox, put: WaitingPut): void => {
    const sender = put.message.sender;
    const agent = this.isAgent(sender) ? sender : this.acting();
    if (agent !== undefined) this.waits.push({ agent, mailbox, put });
  };

  /** Forgets the puts that ended; returns the agents whose put ended (their code has run on since). */
  settle(): string[] {
    if (this.waits.length === 0) return [];
    const ended: string[] = [];
    this.waits = this.waits.filter((w) => {
      if (w.put.settled) ended.push(w.agent);
      return !w.put.settled;
    });
    return ended;
  }

  /** Whether code of `agent` waits for room in a mailbox. */
  waiting(agent: string): boolean {
    return this.waits.some((w) => w.agent === agent && !w.put.settled);
  }

  /**
   * An edge from each agent of `runners` busy in a handler that waits for
   * room to the agent whose mailbox is full (as for asks, only a handler
   * counts: a loop delivering a handler's result is not in the graph).
   */
  edges(runners: ReadonlyMap<string, ProcessRunner>): WaitEdge[] {
    const edges: WaitEdge[] = [];
    for (const w of this.waits) {
      if (w.put.settled || runners.get(w.agent)?.current === undefined) continue;
      for (const [name, r] of runners) {
        if (r.box === w.mailbox) {
          edges.push({ from: w.agent, to: name, type: w.put.message.type, via: "put" });
          break;
        }
      }
    }
    return edges;
  }

  /** Forgets every wait (a kill discards the mailboxes). */
  clear(): void {
    this.waits = [];
  }
}
