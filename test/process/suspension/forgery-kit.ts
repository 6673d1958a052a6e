/**
 * The scene of the forgery tests: an in-process attacker using only what the
 * public types expose (and casts that drop `readonly`), against agents that
 * are paused or running. {@link Scene.verdict} says whether anything the
 * attack must not reach changed: an agent's status, its stored marker, its
 * `agent.suspension`, an `agent.resume` receipt, an `onResume`, an
 * `authorizeResume` call.
 */
import { expect } from "vitest";
import {
  AgentProcess,
  createMessage,
  ErrorAction,
  ProcessStatus,
  type AuthorizeResume,
  type JsonValue,
  type Message,
  type SuspensionMarker,
} from "../../../src/index.js";
import { Pausable, rig, type Rig } from "./helpers.js";
import { turns } from "../../support/agents.js";

/** What an attack is run with. */
export interface Scene extends Rig {
  /** Paused by `runtime.suspend` (reason "needs approval"). */
  readonly victim: Pausable;
  /** Paused too: a second pause that a control message meant for `victim` must not lift. */
  readonly victim2: Pausable;
  /** Running. */
  readonly bystander: Pausable;
  /** Running; its handler runs whatever {@link Mallory.plan} says. */
  readonly mallory: Mallory;
  /** `control.forged` events so far: (agent, type). */
  readonly forged: string[];
  /** Calls of `authorizeResume` so far. */
  readonly authorizations: string[];
  /** Runs `plan` inside Mallory's handler (for one message) and waits until it settled. */
  inside(plan: Plan): Promise<void>;
  /** Whether the attack reached anything it must not. */
  verdict(): Promise<string[]>;
}

/** What Mallory does with one message. */
export type Plan = (self: Mallory, message: Message) => Promise<Message | void> | Message | void;

/** An attacker agent: its handler runs the plan it is given; its `onStart` may run one too. */
export class Mallory extends AgentProcess {
  plan: Plan | undefined;
  startPlan: ((self: Mallory) => Promise<void>) | undefined;
  readonly errors: unknown[] = [];
  readonly resumes: string[] = [];
  /** What `onError` answers. */
  onErrorAction: ErrorAction = ErrorAction.SKIP;
  handledCount = 0;

  override async onError(): Promise<ErrorAction> {
    return this.onErrorAction;
  }

  override async onResume(approver: string): Promise<void> {
    this.resumes.push(approver);
  }

  override async onStart(): Promise<void> {
    await this.startPlan?.(this);
  }

  override async handle(message: Message): Promise<Message | void> {
    this.handledCount++;
    const plan = this.plan;
    this.plan = undefined;
    return plan?.(this, message);
  }

  /** Runs `attempt`, keeping what it throws (an attack that throws must not crash the attacker, or the scene changes). */
  async attempt(attempt: () => unknown): Promise<void> {
    try {
      await attempt();
    } catch (error) {
      this.errors.push(error);
    }
  }

  /** `reply()` built to be edited: the attacker casts away `readonly`. */
  editableReply(): Record<string, unknown> {
    return this.reply({ approver: "alice" }) as unknown as Record<string, unknown>;
  }
}

interface Observed {
  readonly statuses: ProcessStatus[];
  readonly stored: (JsonValue | undefined)[];
  readonly suspensions: (SuspensionMarker | undefined)[];
  readonly resumeReceipts: number;
  readonly onResumes: number;
}

/** A message the attacker can change after handing it over: `readonly` cast away. */
export type Mutable = { -readonly [K in keyof Message]: Message[K] } & Record<string, unknown>;

/** A resume request as a forger writes it: a business message to `recipient` whose fields it edits later. */
export function businessLike(recipient: string, fields: Record<string, unknown> = {}): Mutable {
  return { ...createMessage({ sender: "_runtime", recipient, payload: { approver: "alice" } }), ...fields };
}

/** Builds and starts the scene; the victims are paused through the runtime. */
export async function scene(options: { authorizeResume?: AuthorizeResume; startPlan?: (self: Mallory) => Promise<void> } = {}): Promise<Scene> {
  const victim = new Pausable("victim", { capabilities: ["pay"] });
  const victim2 = new Pausable("victim2");
  const bystander = new Pausable("bystander");
  const mallory = new Mallory("mallory", { capabilities: ["evil"] });
  mallory.startPlan = options.startPlan;
  const authorizations: string[] = [];
  const authorize: AuthorizeResume = (agent, approver, marker) => {
    authorizations.push(`${agent}:${approver}`);
    return options.authorizeResume?.(agent, approver, marker) ?? true;
  };
  const r = rig([victim, victim2, bystander, mallory], { authorizeResume: authorize });
  const forged: string[] = [];
  r.runtime.on("control.forged", (agent, message) => forged.push(`${agent}:${message.type}`));
  await r.runtime.start();
  await r.runtime.suspend("victim", "needs approval");
  await r.runtime.suspend("victim2", "needs approval too");
  const agents = [victim, victim2, bystander, mallory];
  const observe = async (): Promise<Observed> => ({
    statuses: agents.map((a) => a.status),
    stored: await Promise.all(agents.map((a) => r.store.marker(a.name))),
    suspensions: agents.map((a) => (a.suspension === undefined ? undefined : { ...a.suspension })),
    resumeReceipts: r.audit.events.filter((e) => e.event === "agent.resume").length,
    onResumes: victim.resumes.length + victim2.resumes.length + bystander.resumes.length + mallory.resumes.length,
  });
  const before = await observe();
  const authorizationsBefore = authorizations.length;
  return {
    ...r,
    victim,
    victim2,
    bystander,
    mallory,
    forged,
    authorizations,
    async inside(plan) {
      const handled = mallory.handledCount;
      mallory.plan = plan;
      await r.runtime.send("mallory", { go: true });
      for (let i = 0; i < 200 && mallory.handledCount === handled; i++) await turns(1);
      await turns(20);
    },
    async verdict() {
      await turns(20);
      const after = await observe();
      const changed: string[] = [];
      after.statuses.forEach((s, i) => s !== before.statuses[i] && changed.push(`${agents[i]!.name} ${before.statuses[i]} -> ${s}`));
      after.stored.forEach((m, i) => JSON.stringify(m) !== JSON.stringify(before.stored[i]) && changed.push(`${agents[i]!.name}'s stored marker`));
      after.suspensions.forEach((m, i) => JSON.stringify(m) !== JSON.stringify(before.suspensions[i]) && changed.push(`${agents[i]!.name}.suspension`));
      if (after.resumeReceipts !== before.resumeReceipts) changed.push("an agent.resume receipt");
      if (after.onResumes !== before.onResumes) changed.push("an onResume");
      if (authorizations.length !== authorizationsBefore) changed.push("an authorizeResume call");
      return changed;
    },
  };
}

/** Asserts the attack reached nothing, and counts it (see {@link tally}). */
export async function expectNoEffect(s: Scene, name: string): Promise<void> {
  const changed = await s.verdict();
  tally.tried++;
  if (changed.length > 0) tally.succeeded.push(name);
  expect(changed, `the attack "${name}" changed: ${changed.join(", ")}`).toEqual([]);
}

/**
 * Asserts that Mallory, having asked for its own pause, is paused and stays
 * so (nothing else changed, no resume anywhere), and counts the attempt.
 */
export async function expectOwnPauseKept(s: Scene, name: string): Promise<void> {
  const changed = await s.verdict();
  const expected = ["mallory RUNNING -> SUSPENDED", "mallory's stored marker", "mallory.suspension"];
  tally.tried++;
  const ok = JSON.stringify(changed) === JSON.stringify(expected) && s.mallory.status === ProcessStatus.SUSPENDED;
  if (!ok) tally.succeeded.push(name);
  expect(changed, `the attack "${name}"`).toEqual(expected);
}

/** Attempts tried and those that succeeded, for the suite's summary. */
export const tally: { tried: number; succeeded: string[] } = { tried: 0, succeeded: [] };
