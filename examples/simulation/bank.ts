/**
 * The small bank the simulation examples plant their bugs in: accounts
 * that each hold a balance, and the money that must neither appear nor
 * vanish however the runtime interleaves the agents that move it.
 */
import { AgentProcess, type Message } from "civitas-ts";

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
