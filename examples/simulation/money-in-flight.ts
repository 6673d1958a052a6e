/**
 * Planted bug 2, an auditor that sees money in flight.
 *
 * A coordinator moves money with a `withdraw` from one account and then a
 * `deposit` into the other: correct, but not atomic across the two agents.
 * The buggy auditor reads each account's balance itself; when a transfer
 * is between its withdraw and its deposit while the auditor reads, the sum
 * is short and the auditor raises a false alarm.
 *
 * The fix reads through the coordinator: it handles one message at a time,
 * so an audit it runs never overlaps a transfer it runs.
 */
import fc from "fast-check";
import { AgentProcess, Supervisor, type Message } from "civitas-ts";
import type { SimulationCommand } from "civitas-ts/testing";
import { Account, OPENING_BALANCE, type PlantedBug, type Transfer } from "./bank.js";

/** The accounts of this system. */
export const ACCOUNTS = ["alice", "bob"] as const;

/** The money in the system: it never changes. */
export const TOTAL = ACCOUNTS.length * OPENING_BALANCE;

/** What an auditor keeps: the sums it found that were not {@link TOTAL}. */
export type AuditorState = { alarms: number[] };

async function sumOfBalances(agent: AgentProcess): Promise<number> {
  let sum = 0;
  for (const account of ACCOUNTS) sum += Number((await agent.ask(account, {}, { type: "balance" })).payload.balance);
  return sum;
}

/** Moves money (withdraw, then deposit) and, for the fixed auditor, sums the balances between transfers. */
export class TransferCoordinator extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "audit") return this.reply({ sum: await sumOfBalances(this) });
    const { from, to, amount } = message.payload as Transfer;
    await this.ask(from, { amount }, { type: "withdraw" });
    await this.ask(to, { amount }, { type: "deposit" });
    return this.reply({ done: true });
  }
}

/** The buggy auditor: reads the accounts directly, while transfers run. */
export class PeekingAuditor extends AgentProcess<AuditorState> {
  override state: AuditorState = { alarms: [] };

  override async handle(): Promise<Message | void> {
    const sum = await sumOfBalances(this);
    if (sum !== TOTAL) this.state.alarms.push(sum);
    return this.reply({ sum });
  }
}

/** The fixed auditor: asks the coordinator, which serializes the audit with its transfers. */
export class SerializedAuditor extends AgentProcess<AuditorState> {
  override state: AuditorState = { alarms: [] };

  override async handle(): Promise<Message | void> {
    const sum = Number((await this.ask("coordinator", {}, { type: "audit" })).payload.sum);
    if (sum !== TOTAL) this.state.alarms.push(sum);
    return this.reply({ sum });
  }
}

/** The root of the system: two accounts, a coordinator and an auditor, buggy or fixed. */
export function moneyInFlightSystem(fixed: boolean): () => Supervisor {
  const Auditor = fixed ? SerializedAuditor : PeekingAuditor;
  return () =>
    new Supervisor("bank", {
      children: [...ACCOUNTS.map((name) => new Account(name)), new TransferCoordinator("coordinator"), new Auditor("auditor")],
    });
}

/** Bug 2 as a property: transfers and audits, and the alarms the auditor raised. */
export const moneyInFlight: PlantedBug = {
  title: "an auditor that sees money in flight",
  root: moneyInFlightSystem,
  command: fc.oneof(
    fc.record({ forward: fc.boolean(), amount: fc.integer({ min: 1, max: 50 }) }).map(({ forward, amount }): SimulationCommand => {
      const [from, to] = forward ? ACCOUNTS : [ACCOUNTS[1], ACCOUNTS[0]];
      return { label: `transfer(${from}->${to}, ${amount})`, issue: (sim) => sim.ask("coordinator", "transfer", { from, to, amount }) };
    }),
    fc.constant<SimulationCommand>({ label: "audit", issue: (sim) => sim.ask("auditor", "audit") }),
  ),
  check: (view) => {
    const alarms = view.agent<PeekingAuditor>("auditor").state.alarms;
    return alarms.length === 0 ? undefined : `the auditor raised ${alarms.length} false alarm(s): it summed ${alarms.join(", ")} while the bank held ${TOTAL}`;
  },
  settle: "run",
};
