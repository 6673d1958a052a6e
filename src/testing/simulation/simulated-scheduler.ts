import { peekMessage } from "../../mailbox/mailbox-internals.js";
import { priorityOf } from "../../message/system-types.js";
import type { Message } from "../../message/message.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import { ProcessStatus } from "../../contracts/process-status.js";
import { Scheduler } from "../../contracts/scheduler.js";
import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import { SimulatedCrash } from "./simulation-failure.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

/** Counts, per sender and recipient, the messages taken: the ordinal in a delivery's key. */
export type DeliveryOrdinals = Map<string, number>;

/**
 * The scheduler of a runtime in a simulation: each agent's next dispatch
 * waits at a gate until the simulation chooses it, so at most one agent's
 * handler code runs per step. The mailbox still decides which message the
 * agent takes (priority first; while SUSPENDED, priority only).
 */
export class SimulatedScheduler extends Scheduler {
  private readonly released = new Set<ProcessRunner>();
  /** Every agent that dispatched in this runtime, by name. */
  readonly runners = new Map<string, ProcessRunner>();

  constructor(
    private readonly board: GateBoard,
    private readonly epoch: number,
    private readonly ordinals: DeliveryOrdinals,
  ) {
    super();
  }

  override tick(runner: ProcessRunner): Promise<void> | undefined {
    if (this.released.delete(runner)) return undefined;
    this.runners.set(runner.agent.name, runner);
    return new Promise((resolve) =>
      this.board.add(
        new DeliveryGate(runner, this.ordinals, () => {
          this.released.add(runner);
          resolve();
        }),
        this.epoch,
      ),
    );
  }
}

const CRASHABLE: readonly SimulationFaultKind[] = ["crash"];
const NONE: readonly SimulationFaultKind[] = [];

/** An agent's loop waiting to take its next message. */
class DeliveryGate implements Gate {
  private head: Message | undefined;
  private pair = "";
  private ordinal = 0;
  /** The last offer and what it was made from: offered again, unchanged, while the head and its ordinal are. */
  private offered: SimulationChoice | undefined;
  faults: readonly SimulationFaultKind[] = NONE;

  constructor(
    private readonly runner: ProcessRunner,
    private readonly ordinals: DeliveryOrdinals,
    private readonly release: () => void,
  ) {}

  offer(): SimulationChoice | undefined {
    const r = this.runner;
    const name = r.agent.name;
    const status = r.currentStatus;
    if (status !== ProcessStatus.RUNNING && status !== ProcessStatus.SUSPENDED) {
      this.head = undefined;
      this.faults = NONE;
      return { kind: "deliver", key: `${name}:${status.toLowerCase()}`, thread: name, agent: name };
    }
    const suspending = status === ProcessStatus.RUNNING && r.suspension.request !== undefined;
    const head = peekMessage(r.mailbox, status === ProcessStatus.SUSPENDED || suspending);
    this.head = head;
    if (head === undefined) {
      this.faults = NONE;
      return suspending ? { kind: "deliver", key: `${name}:suspend`, thread: name, agent: name } : undefined;
    }
    const pair = `${head.sender}>${name}`;
    const ordinal = (this.ordinals.get(pair) ?? 0) + 1;
    const business = priorityOf(head.type) === 0 && head.type !== "civitas.eval.correction" && !suspending;
    this.faults = business || head.type === "_agency.resume" ? CRASHABLE : NONE;
    if (this.offered !== undefined && this.offered.type === head.type && this.pair === pair && this.ordinal === ordinal) return this.offered;
    this.pair = pair;
    this.ordinal = ordinal;
    this.offered = { kind: "deliver", key: `${name}<-${head.sender}:${head.type}#${ordinal}`, thread: name, agent: name, from: head.sender, type: head.type };
    return this.offered;
  }

  open(fault: SimulationFaultKind | undefined): GateOutcome {
    const head = this.head;
    let detail: string | undefined;
    disarmCrash(this.runner, true);
    if (head !== undefined) {
      this.ordinals.set(this.pair, this.ordinal);
      if (fault === "crash") detail = crashOnce(this.runner, head);
    }
    this.release();
    const outcome: GateOutcome = head === undefined ? { kind: "deliver" } : { kind: fault === "crash" ? "crash" : "deliver", from: head.sender, type: head.type, messageId: head.id };
    return detail === undefined ? outcome : { ...outcome, detail };
  }
}

/** The one-shot crashes armed and not yet called, by agent, with how to put back what they shadowed. */
const armed = new WeakMap<object, { readonly method: "handle" | "onResume"; readonly restore: () => void }>();

/**
 * Makes the agent's next `handle` (or, for a resume, `onResume`) throw a
 * {@link SimulatedCrash} instead of running: an own property shadows the
 * method for one call, then puts back what was there.
 */
function crashOnce(r: ProcessRunner, head: Message): string {
  const method = head.type === "_agency.resume" ? "onResume" : "handle";
  const agent = r.agent as unknown as Record<string, unknown>;
  const name = r.agent.name;
  const previous = Object.getOwnPropertyDescriptor(agent, method);
  const restore = (): void => {
    armed.delete(agent);
    if (previous === undefined) delete agent[method];
    else Object.defineProperty(agent, method, previous);
  };
  armed.set(agent, { method, restore });
  Object.defineProperty(agent, method, {
    configurable: true,
    writable: true,
    value: () => {
      restore();
      return Promise.reject(new SimulatedCrash(name, method === "onResume" ? "inside onResume" : `in handle of ${head.type}`));
    },
  });
  return method === "onResume" ? "inside onResume" : "in handle";
}

/**
 * Puts back a one-shot crash the runtime did not call: a `handle` crash
 * after its step (the message expired, the agent stopped); with `all`, an
 * `onResume` crash too (it is called steps after the resume was taken, so
 * it stays armed until the agent's next delivery, or a kill).
 */
export function disarmCrash(r: ProcessRunner, all: boolean): void {
  const crash = armed.get(r.agent);
  if (crash !== undefined && (all || crash.method === "handle")) crash.restore();
}
