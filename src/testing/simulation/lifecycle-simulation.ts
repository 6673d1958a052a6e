import { InvalidArgumentError } from "../../errors/errors.js";
import { uuidv7 } from "../../message/ids.js";
import type { JsonObject } from "../../message/json.js";
import { AgentProcess } from "../../process/agent-process.js";
import { ProcessStatus } from "../../contracts/process-status.js";
import { Supervisor } from "../../supervision/supervisor.js";
import { CRASH_MESSAGE_TYPE, instrument, LIFECYCLE_ID_KEY, SELF_SUSPEND_MESSAGE_TYPE } from "../instrument.js";
import { formatCommand, LIFECYCLE_DEADLINE_MS, type ApproverKind, type LifecycleCommand, type MessageCommand } from "../lifecycle-command.js";
import type { HandledRecord } from "../lifecycle-observation.js";
import type { SimulationCommand } from "./scenario.js";
import type { Simulation, SimulationView } from "./types.js";

/** Options of {@link LifecycleSimulation}. */
export interface LifecycleSimulationOptions {
  /** Builds the agent under test, named `name`; called at the start and after every kill. @defaultValue a plain `AgentProcess` */
  readonly createAgent?: (name: string) => AgentProcess;
  /** The subject's name. @defaultValue "subject" */
  readonly agentName?: string;
  /** The sibling's name. @defaultValue "sibling" */
  readonly siblingName?: string;
}

/** What a {@link LifecycleSimulation} observed, comparable with the same fields of `SuspensionModel.run(commands).outcome`. */
export interface LifecycleSimulationOutcome {
  /** Ids of the `send`, `ask` and `selfSuspend` messages the subject handled to the end, in order. */
  readonly handled: readonly number[];
  /** Ids of the `crash` messages the subject took, in order. */
  readonly crashed: readonly number[];
  /** Ids of the messages sent that the subject never took, in order. */
  readonly unhandled: readonly number[];
  /** The subject's status now. */
  readonly status: ProcessStatus;
  /** The suspension the subject is in, numbered 1, 2 … in the order suspensions began, or `null`. */
  readonly suspension: number | null;
  /** Its reason, or `null`. */
  readonly reason: string | null;
}

/**
 * The lifecycle commands of the one-agent kit (`LifecycleCommand`: sends,
 * asks, self and external suspensions, resumes and denies with every kind
 * of approver, crashes, sibling crashes, process restarts) as commands of a
 * simulation scenario, over the same system `LifecycleDriver` builds: the
 * subject next to a sibling under a ONE_FOR_ALL supervisor. A `restart` is a
 * kill (`sim.kill()`) after which the messages the subject had not taken are
 * sent again, in order, as a durable transport would keep them. Two kit
 * commands have no simulated form: `elapse` (virtual time moves only when
 * nothing is ready) and `shutdown` (it ends the simulation); they are refused.
 *
 * Mix them with commands of your own in a scenario, one command per round
 * to compare with `SuspensionModel`, several per round to let them overlap.
 *
 * @example
 * ```ts
 * const life = new LifecycleSimulation({ createAgent: (name) => new Payer(name) });
 * const scenario = simulationScenario(commands.map((c) => [life.command(c)]));
 * await runSimulationScenario(scenario, { root: life.root, seed, settle: "idle", check: (view) => {
 *   const model = SuspensionModel.run(commands);
 *   expect(life.outcome(view)).toMatchObject({ handled: model.handled, status: model.steps.at(-1)?.status ?? "RUNNING" });
 * }});
 * ```
 */
export class LifecycleSimulation {
  readonly #createAgent: (name: string) => AgentProcess;
  readonly #name: string;
  readonly #siblingName: string;
  readonly #sent: MessageCommand[] = [];
  readonly #taken = new Set<number>();
  readonly #handled: number[] = [];
  readonly #crashed: number[] = [];
  readonly #entries: HandledRecord[] = [];
  #instance = -1;
  #index = 0;

  /** @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when the subject and the sibling share a name */
  constructor(options: LifecycleSimulationOptions = {}) {
    this.#createAgent = options.createAgent ?? ((name) => new AgentProcess(name));
    this.#name = options.agentName ?? "subject";
    this.#siblingName = options.siblingName ?? "sibling";
    if (this.#name === this.#siblingName) throw new InvalidArgumentError("siblingName", `LifecycleSimulation: the subject and the sibling need different names, both are '${this.#name}'`);
  }

  /** The system's root factory, for `simulate({ root })`: a new instrumented subject and sibling each time. */
  readonly root = (): Supervisor => {
    const instance = ++this.#instance;
    const subject = this.#createAgent(this.#name);
    if (!(subject instanceof AgentProcess) || subject.name !== this.#name) {
      throw new InvalidArgumentError("createAgent", `LifecycleSimulation: createAgent('${this.#name}') must return a new AgentProcess named '${this.#name}'`);
    }
    instrument(subject, {
      entered: (id, status, incarnation) => {
        this.#taken.add(id);
        this.#entries.push({ id, status, instance, incarnation, step: -1 });
        if (this.#sent.find((c) => c.id === id)?.kind === "crash") this.#crashed.push(id);
      },
      completed: (id) => this.#handled.push(id),
      busy: () => undefined,
    });
    const sibling = new AgentProcess(this.#siblingName);
    instrument(sibling, { entered: () => undefined, completed: () => undefined, busy: () => undefined });
    return new Supervisor(`${this.#name}-supervisor`, { strategy: "ONE_FOR_ALL", children: [subject, sibling], maxRestarts: 1_000_000, backoffBaseMs: 0 });
  };

  /** Every entry into the subject's `handle` for a kit message, with the status it was entered in (RUNNING, in a correct runtime). */
  get entries(): readonly HandledRecord[] {
    return this.#entries;
  }

  /**
   * `command` as a scenario command. Message ids must be unique (as
   * `lifecycleCommandsArbitrary` numbers them).
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for `elapse` and `shutdown`, which have no simulated form
   */
  command(command: LifecycleCommand): SimulationCommand {
    const label = formatCommand(command);
    const index = this.#index++;
    switch (command.kind) {
      case "send":
      case "ask":
      case "selfSuspend":
      case "crash":
        return { label, issue: (sim) => this.#deliver(sim, command) };
      case "suspend":
        return { label, issue: (sim) => sim.suspend(this.#name, command.reason, command.deadline === true ? { expiresInMs: LIFECYCLE_DEADLINE_MS } : {}) };
      case "resume":
      case "deny":
        return {
          label,
          issue: (sim) => {
            const approver = approverOf(command.approver, index);
            const suspensionId = this.#suspensionIdFor(sim.view, command.approver, command.bySuspensionId === true);
            const options = suspensionId === undefined ? {} : { suspensionId };
            return command.kind === "resume" ? sim.resume(this.#name, approver, options) : sim.deny(this.#name, approver, options);
          },
        };
      case "siblingCrash":
        return { label, issue: (sim) => sim.send(this.#siblingName, CRASH_MESSAGE_TYPE, { [LIFECYCLE_ID_KEY]: -1 }) };
      case "restart":
        return {
          label,
          exclusive: true,
          issue: async (sim) => {
            await sim.kill();
            for (const pending of this.#sent.filter((c) => !this.#taken.has(c.id))) void this.#deliver(sim, pending, false).catch(() => undefined);
          },
        };
      default:
        throw new InvalidArgumentError("command", `LifecycleSimulation: ${label} has no simulated form (virtual time moves only when nothing is ready, and a shutdown ends the simulation); leave it out (lifecycleCommandsArbitrary({ weights: { elapse: 0 }, shutdown: "never" }))`);
    }
  }

  /** What the run led to, read once the simulation is quiescent. */
  outcome(view: SimulationView): LifecycleSimulationOutcome {
    const marker = view.agent(this.#name).suspension;
    return {
      handled: [...this.#handled],
      crashed: [...this.#crashed],
      unhandled: this.#sent.filter((c) => !this.#taken.has(c.id)).map((c) => c.id),
      status: view.status(this.#name) ?? ProcessStatus.STOPPED,
      suspension: marker === undefined ? null : this.#suspensionIds(view).indexOf(marker.suspensionId) + 1,
      reason: marker === undefined ? null : marker.reason,
    };
  }

  #deliver(sim: Simulation, command: MessageCommand, record = true): Promise<unknown> {
    if (record) this.#sent.push(command);
    const payload: JsonObject = { [LIFECYCLE_ID_KEY]: command.id };
    switch (command.kind) {
      case "send":
        return sim.send(this.#name, "message", payload);
      case "ask":
        return sim.ask(this.#name, "message", payload);
      case "selfSuspend":
        return sim.send(this.#name, SELF_SUSPEND_MESSAGE_TYPE, { ...payload, reason: command.reason });
      case "crash":
        return sim.send(this.#name, CRASH_MESSAGE_TYPE, payload);
    }
  }

  /** The subject's suspension ids, in the order their `agent.suspend` receipts were written (the audit log survives kills). */
  #suspensionIds(view: SimulationView): string[] {
    const ids: string[] = [];
    for (const event of view.audit) {
      const id = event.details.suspensionId;
      if (event.agent === this.#name && event.event === "agent.suspend" && typeof id === "string" && !ids.includes(id)) ids.push(id);
    }
    return ids;
  }

  #suspensionIdFor(view: SimulationView, approver: ApproverKind, bySuspensionId: boolean): string | undefined {
    const current = view.agent(this.#name).suspension?.suspensionId;
    if (approver === "stale") return this.#suspensionIds(view).reverse().find((id) => id !== current) ?? uuidv7(view.now);
    return approver === "valid" && bySuspensionId ? current : undefined;
  }
}

function approverOf(kind: ApproverKind, index: number): string {
  return kind === "empty" ? "" : kind === "whitespace" ? " \t" : `approver-${index}`;
}
