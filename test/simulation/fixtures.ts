/**
 * A small bank for the simulation tests: a ledger holding two accounts and
 * coordinators that move money between them by asking the ledger for a
 * balance, then telling it the new balances (a lost update when two
 * transfers interleave: the planted read-modify-write race).
 */
import { AgentProcess } from "../../src/process/agent-process.js";
import type { Message } from "../../src/message/message.js";
import { Supervisor } from "../../src/supervision/supervisor.js";

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
  override async handle(message: Message): Promise<Message | void> {
    const { from, to, amount } = message.payload as { from: string; to: string; amount: number };
    const a = await this.ask("ledger", { account: from }, { type: "balance" });
    const b = await this.ask("ledger", { account: to }, { type: "balance" });
    await this.send("ledger", { account: from, value: (a.payload.value as number) - amount }, { type: "set" });
    await this.send("ledger", { account: to, value: (b.payload.value as number) + amount }, { type: "set" });
  }
}

/** The bank: a ledger and two coordinators under one supervisor. */
export function bank(): Supervisor {
  return new Supervisor("bank", { children: [new Ledger("ledger"), new Coordinator("coord-a"), new Coordinator("coord-b")] });
}
