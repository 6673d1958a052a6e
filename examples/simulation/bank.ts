/**
 * The small bank the simulation examples plant their bugs in: accounts
 * that each hold a balance, and the money that must neither appear nor
 * vanish however the runtime interleaves the agents that move it.
 */
import type { Arbitrary } from "fast-check";
import { AgentProcess, type Message, type SupervisedChild } from "civitas-ts";
import type { SimulationCommand, SimulationView } from "civitas-ts/testing";

/** What an {@link Account} keeps (and checkpoints). */
export type AccountState = { balance: number };

/** Every account starts with this much. */
export const OPENING_BALANCE = 100;

/**
 * One account. Each message is handled alone (one message at a time per
 * agent), so `withdraw` and `deposit` are atomic here; `balance` and `set`
 * let a caller read and overwrite the balance, which is where a
 * read-modify-write across agents goes wrong.
 */
export class Account extends AgentProcess<AccountState> {
  override state: AccountState = { balance: OPENING_BALANCE };

  override async handle(message: Message): Promise<Message | void> {
    switch (message.type) {
      case "balance":
        return this.reply({ balance: this.state.balance });
      case "set":
        this.state.balance = Number(message.payload.balance);
        await this.checkpoint();
        return this.reply({ balance: this.state.balance });
      case "withdraw":
        this.state.balance -= Number(message.payload.amount);
        await this.checkpoint();
        return this.reply({ balance: this.state.balance });
      case "deposit":
        this.state.balance += Number(message.payload.amount);
        await this.checkpoint();
        return this.reply({ balance: this.state.balance });
      default:
        throw new Error(`account '${this.name}' got an unknown message type '${message.type}'`);
    }
  }
}

/** A transfer a user asks a coordinator for. */
export type Transfer = { from: string; to: string; amount: number };

/**
 * A planted bug, as the tests and the demo use it: the system (buggy or
 * fixed), the user operations a property draws, and what must hold once
 * the system is quiescent.
 */
export interface PlantedBug {
  /** A few words: "lost update between two transfer coordinators". */
  readonly title: string;
  /** The system's root, buggy (`fixed: false`) or fixed. */
  root(fixed: boolean): () => SupervisedChild;
  /** The user operations a scenario is made of. */
  readonly command: Arbitrary<SimulationCommand>;
  /** What must hold once the system is quiescent: a description of what is wrong, or nothing. */
  check(view: SimulationView): string | undefined;
  /** How each round of a scenario ends (see `runSimulationScenario`). */
  readonly settle: "run" | "idle";
}

/** The sum of the accounts' balances, read from the live agents. */
export function totalOf(view: SimulationView, accounts: readonly string[]): number {
  return accounts.reduce((sum, name) => sum + view.agent<Account>(name).state.balance, 0);
}
