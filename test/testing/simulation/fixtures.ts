/**
 * A small bank for the simulation tests: a ledger holding two accounts and
 * coordinators that move money between them by asking the ledger for a
 * balance, then telling it the new balances (a lost update when two
 * transfers interleave: the planted read-modify-write race).
 */
import { AgentProcess } from "../../../src/process/agent-process.js";
import type { Message } from "../../../src/message/message.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { randomChooser } from "../../../src/testing/simulation/random-chooser.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Chooser, Simulation, SimulationFaultKind, SimulationInvariant } from "../../../src/testing/simulation/types.js";
import { lostUpdate } from "../../../examples/simulation/lost-update.js";

/**
 * Both balances of a transfer (alice, bob: 100 each) in one agent: each
 * message moves `amount` from alice to bob in one checkpoint, so a crash
 * takes all of a transfer or none of it (the fix of the split-transfer bugs).
 */
export class TwoAccountBooks extends AgentProcess<{ alice: number; bob: number }> {
  override state = { alice: 100, bob: 100 };
  override async handle(message: Message): Promise<void> {
    const amount = Number(message.payload.amount);
    this.state.alice -= amount;
    this.state.bob += amount;
    await this.checkpoint();
  }
}

/** Holds the accounts; answers `balance`, applies `set`, `deposit` (checkpointed). */
export class Ledger extends AgentProcess<{ accounts: Record<string, number> }> {
  override async onStart(): Promise<void> {
    this.state.accounts ??= { x: 50, y: 50 };
  }

  get total(): number {
    return Object.values(this.state.accounts).reduce((a, b) => a + b, 0);
  }

  override async handle(message: Message): Promise<Message | void> {
    const p = message.payload as { account?: string; value?: number; amount?: number };
    switch (message.type) {
      case "balance":
        return this.reply({ value: this.state.accounts[p.account as string] ?? 0 });
      case "set":
        this.state.accounts[p.account as string] = p.value as number;
        await this.checkpoint();
        return;
      case "deposit":
        this.state.accounts.x = (this.state.accounts.x ?? 0) + (p.amount as number);
        await this.checkpoint();
        return this.reply({ ok: true });
    }
  }
}

/** Moves `amount` from `from` to `to`: reads both balances, then writes both (not atomic). */
export class Coordinator extends AgentProcess {
  /** Transfers handled to the end. */
  finished = 0;

  override async handle(message: Message): Promise<Message | void> {
    const { from, to, amount } = message.payload as { from: string; to: string; amount: number };
    const a = await this.ask("ledger", { account: from }, { type: "balance" });
    const b = await this.ask("ledger", { account: to }, { type: "balance" });
    await this.send("ledger", { account: from, value: (a.payload.value as number) - amount }, { type: "set" });
    await this.send("ledger", { account: to, value: (b.payload.value as number) + amount }, { type: "set" });
    this.finished += 1;
  }
}

/** The bank: a ledger and two coordinators under one supervisor. */
export function bank(): Supervisor {
  return new Supervisor("bank", { children: [new Ledger("ledger"), new Coordinator("coord-a"), new Coordinator("coord-b")] });
}

/**
 * Pays with approval: a `pay` message stores the pending payment,
 * checkpoints and suspends; after the resume, `onResume` pays it (once) and
 * clears it. `paid` counts payments made (durable, in state).
 */
export class Payer extends AgentProcess<{ pending?: number; paid: number; handled: number }> {
  override async onStart(): Promise<void> {
    this.state.paid ??= 0;
    this.state.handled ??= 0;
  }

  override async handle(message: Message): Promise<void> {
    this.state.handled += 1;
    if (message.type === "pay") {
      this.state.pending = (message.payload as { amount: number }).amount;
      await this.checkpoint();
      this.suspend("payment needs approval");
    }
  }

  override async onResume(): Promise<void> {
    if (this.state.pending === undefined) return;
    this.state.paid += 1;
    delete this.state.pending;
    await this.checkpoint();
  }
}

/** `a` asks `b` and `b` asks `a` when told `start`: a deadlock. */
export class Asker extends AgentProcess {
  constructor(
    name: string,
    private readonly peer: string,
  ) {
    super(name);
  }

  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "start") await this.ask(this.peer, {}, { type: "question" });
    if (message.type === "question") {
      await this.ask(this.peer, {}, { type: "question" });
      return this.reply({});
    }
  }
}

/** Records, per sender, the `seq` of each business message it handles, in order. */
export class Recorder extends AgentProcess {
  readonly seen: { from: string; seq: number }[] = [];

  override async handle(message: Message): Promise<void> {
    this.seen.push({ from: (message.payload as { from: string }).from, seq: (message.payload as { seq: number }).seq });
  }
}

/** Forwards each message it gets to `recorder`, keeping its payload. */
export class Forwarder extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    await this.send("recorder", message.payload, { type: message.type });
  }
}

/** Fails when both transfers are done, the ledger applied every write, and money was created or lost. */
export const conserved: SimulationInvariant = function conserved(view) {
  const ledger = view.agent<Ledger>("ledger");
  const finished = view.agent<Coordinator>("coord-a").finished + view.agent<Coordinator>("coord-b").finished;
  if (finished === 2 && ledger.mailbox.size === 0 && ledger.total !== 100) return `money created or lost: the total is ${ledger.total}`;
};

/**
 * A seeded random chooser that injects exactly one fault: `kind` at the
 * first choice keyed `key` (the simulation asks only for kinds whose
 * probability in `faults` is above 0).
 */
export function faultOnce(key: string, kind: SimulationFaultKind, seed = 1): Chooser {
  const base = randomChooser(seed);
  let done = false;
  return {
    choose: (ready, step) => base.choose(ready, step),
    fault: (choice, asked) => {
      if (done || choice.key !== key || asked !== kind) return false;
      done = true;
      return true;
    },
  };
}

/** Every fault kind possible (the chooser decides which apply). */
export const ALL_FAULTS = { storeWrites: { fail: 0.5, hang: 0.5, lose: 0.5, fenced: 0.5 }, crashes: 0.5, kills: 0.5 } as const;

/** A supervisor holding one agent. */
export function alone(agent: AgentProcess): Supervisor {
  return new Supervisor("root", { children: [agent], backoffBaseMs: 100 });
}

/** Waits on a real timer (a promise the simulation does not control) in its handler. */
export class Sleeper extends AgentProcess {
  done = 0;

  override async handle(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.done += 1;
  }
}

/** Sends itself a message for every message it gets: it never becomes quiescent. */
export class Looper extends AgentProcess {
  override async handle(): Promise<void> {
    await this.send(this.name, {}, { type: "again" });
  }
}

/** The failure `run` rejects with (or `undefined`). */
export async function failureOf(run: Promise<void>): Promise<SimulationFailure | undefined> {
  try {
    await run;
    return undefined;
  } catch (error) {
    if (error instanceof SimulationFailure) return error;
    throw error;
  }
}

/** The each-way lost update of examples/simulation/lost-update.ts: two transfers in opposite directions, run, then its check (a problem is thrown). */
export async function eachWayTransfers(sim: Simulation): Promise<void> {
  void sim.ask("coord-a", "transfer", { from: "alice", to: "bob", amount: 10 });
  void sim.ask("coord-b", "transfer", { from: "bob", to: "alice", amount: 20 });
  await sim.run();
  const problem = lostUpdate.check(sim.view);
  if (problem !== undefined) throw new Error(problem);
}
