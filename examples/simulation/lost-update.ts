/**
 * Planted bug 1, a lost update between two transfer coordinators.
 *
 * Two coordinators move money between the same accounts. The buggy one
 * reads both balances (two asks), computes the new ones and writes them
 * back (two `set`s): when the other coordinator writes the same account
 * between its read and its write, one of the two updates is lost and money
 * appears or vanishes. Each step is correct alone; only some interleavings
 * of four agents break it, and the event loop picks the same few every time.
 *
 * The fix sends the change, not the result: `withdraw` and `deposit` are
 * applied by the account itself, one message at a time.
 */
import fc from "fast-check";
import { AgentProcess, Supervisor, type Message } from "civitas-ts";
import type { SimulationCommand } from "civitas-ts/testing";
import { Account, OPENING_BALANCE, totalOf, type PlantedBug, type Transfer } from "./bank.js";

/** The accounts of this system. */
export const ACCOUNTS = ["alice", "bob"] as const;

/** The coordinators of this system. */
export const COORDINATORS = ["coord-a", "coord-b"] as const;

/** Reads both balances, then writes both results: a lost update when another coordinator writes in between. */
export class ReadModifyWriteCoordinator extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const { from, to, amount } = message.payload as Transfer;
    const source = Number((await this.ask(from, {}, { type: "balance" })).payload.balance);
    const target = Number((await this.ask(to, {}, { type: "balance" })).payload.balance);
    await this.ask(from, { balance: source - amount }, { type: "set" });
    await this.ask(to, { balance: target + amount }, { type: "set" });
    return this.reply({ done: true });
  }
}

/** Sends the change to each account, which applies it atomically. */
export class DeltaCoordinator extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const { from, to, amount } = message.payload as Transfer;
    await this.ask(from, { amount }, { type: "withdraw" });
    await this.ask(to, { amount }, { type: "deposit" });
    return this.reply({ done: true });
  }
}

/** The root of the system: two accounts and two coordinators, buggy or fixed. */
export function lostUpdateSystem(fixed: boolean): () => Supervisor {
  const Coordinator = fixed ? DeltaCoordinator : ReadModifyWriteCoordinator;
  return () =>
    new Supervisor("bank", {
      children: [...ACCOUNTS.map((name) => new Account(name)), ...COORDINATORS.map((name) => new Coordinator(name))],
    });
}

/** Bug 1 as a property: transfers through either coordinator, and the money in the bank afterwards. */
export const lostUpdate: PlantedBug = {
  title: "a lost update between two transfer coordinators",
  root: lostUpdateSystem,
  command: fc
    .record({ coordinator: fc.constantFrom(...COORDINATORS), forward: fc.boolean(), amount: fc.integer({ min: 1, max: 50 }) })
    .map(({ coordinator, forward, amount }): SimulationCommand => {
      const [from, to] = forward ? ACCOUNTS : [ACCOUNTS[1], ACCOUNTS[0]];
      return { label: `transfer(${coordinator}, ${from}->${to}, ${amount})`, issue: (sim) => sim.ask(coordinator, "transfer", { from, to, amount }) };
    }),
  check: (view) => {
    const total = totalOf(view, ACCOUNTS);
    return total === ACCOUNTS.length * OPENING_BALANCE ? undefined : `money created or lost: the accounts hold ${total}, not ${ACCOUNTS.length * OPENING_BALANCE}`;
  },
  settle: "run",
};
