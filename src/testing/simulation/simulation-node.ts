import type { SupervisedChild } from "../../contracts/child.js";
import type { Simulation, SimulationView } from "./types.js";

/**
 * The trees of the other nodes of a simulation, by node name: each node is
 * a runtime of its own process (its own store, audit log and transport),
 * beside the main runtime (`root`, node `"main"`). Each factory is called
 * at `start()` and again when its node is killed.
 * @example
 * ```ts
 * simulate({ root: () => new Client("client"), nodes: { bank: () => new Bank("bank") }, seed: 7 });
 * ```
 */
export type SimulationNodes = Readonly<Record<string, () => SupervisedChild | readonly SupervisedChild[]>>;

/**
 * A node of a simulation other than the main runtime: a runtime of another
 * process, joined to the others by the simulated bus. Its agents reach the
 * agents of the other nodes by name (`send`, `ask`, control), one `net`
 * step per packet, as over `NatsTransport`: a refusal comes back as the
 * ask's `HANDLER_FAILED` (its cause the remote error's code), an answer
 * that never comes ends in the asker's `ASK_TIMEOUT`. The calls are those
 * of {@link Simulation} on this node's runtime, recorded as `op` steps
 * (`op:<node>/send:<to>:<type>` …).
 * @example
 * ```ts
 * const bank = sim.node("bank");
 * void bank.send("ledger", "audit");
 * await bank.kill({ downMs: 2_000 });   // the other nodes go on meanwhile
 * ```
 */
export interface SimulationNode extends Pick<Simulation, "send" | "ask" | "suspend" | "resume" | "deny" | "approve" | "denyApproval"> {
  /** The node's name, as `nodes` has it. */
  readonly name: string;
  /** Read access to this node's runtime, store and audit log. */
  readonly view: SimulationView;
  /**
   * Kills this node ("kill -9") while the others go on: its memory, timers
   * and gates are gone, what its store acknowledged is kept; with `downMs`,
   * it stays down that long in virtual time (packets for it are lost, asks
   * to it time out), then it is rebuilt from its factory and started.
   */
  kill(options?: { downMs?: number }): Promise<void>;
}
