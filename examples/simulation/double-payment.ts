/**
 * Planted bug 3, a double payment after a resume.
 *
 * Every payment needs a human's approval: the payer stores it as pending,
 * suspends itself and returns (checkpoint-and-return). On resume it hands
 * the payment to the bank, which confirms it later with a message. A
 * reconciler sweeps now and then and re-sends every approved payment the
 * bank has not confirmed yet, because a message to the bank may be lost
 * (at-least-once delivery of an effect). When a sweep lands between the
 * resume and the bank's confirmation, the buggy bank pays the invoice twice.
 *
 * The fix is the one SPEC §10 prescribes for effects outside the store: an
 * idempotency key. The bank pays an invoice once, however often it is sent.
 */
import fc from "fast-check";
import { AgentProcess, Supervisor, type Message } from "civitas-ts";
import type { SimulationCommand } from "civitas-ts/testing";
import type { PlantedBug } from "./bank.js";

/** A payment waiting for, or given, approval. */
export type Payment = { invoice: string; amount: number };

/** What the payer keeps (and checkpoints). */
export type PayerState = { pending: Payment | null; unconfirmed: Payment[]; confirmed: string[] };

/** What the bank keeps: the invoices it paid, in order, once per payment made. */
export type BankState = { paid: string[] };

/** Holds each payment for approval, pays it on resume and waits for the bank's confirmation. */
export class Payer extends AgentProcess<PayerState> {
  override state: PayerState = { pending: null, unconfirmed: [], confirmed: [] };

  override async handle(message: Message): Promise<Message | void> {
    switch (message.type) {
      case "unconfirmed":
        return this.reply({ payments: this.state.unconfirmed });
      case "confirm": {
        const invoice = String(message.payload.invoice);
        this.state.unconfirmed = this.state.unconfirmed.filter((p) => p.invoice !== invoice);
        if (!this.state.confirmed.includes(invoice)) this.state.confirmed.push(invoice);
        await this.checkpoint();
        return;
      }
      default: {
        const payment: Payment = { invoice: String(message.payload.invoice), amount: Number(message.payload.amount) };
        const known = this.state.pending?.invoice === payment.invoice || this.state.confirmed.includes(payment.invoice) || this.state.unconfirmed.some((p) => p.invoice === payment.invoice);
        if (known) return this.reply({ status: "duplicate" });
        this.state.pending = payment;
        this.suspend(`approve ${payment.invoice}: ${payment.amount}`);
        await this.checkpoint();
        return this.reply({ status: "awaiting-approval" });
      }
    }
  }

  override async onResume(): Promise<void> {
    const payment = this.state.pending;
    if (payment === null) return;
    this.state.pending = null;
    this.state.unconfirmed.push(payment);
    await this.checkpoint();
    await this.send("bank", payment, { type: "pay" });
  }
}

/** Re-sends every payment the bank has not confirmed yet, in case a message to the bank was lost. */
export class Reconciler extends AgentProcess {
  override async handle(): Promise<Message | void> {
    const answer = await this.ask("payer", {}, { type: "unconfirmed" });
    const payments = answer.payload.payments as Payment[];
    for (const payment of payments) await this.send("bank", payment, { type: "pay" });
    return this.reply({ resent: payments.length });
  }
}

/** The buggy bank: pays whatever it is sent. */
export class Bank extends AgentProcess<BankState> {
  override state: BankState = { paid: [] };

  override async handle(message: Message): Promise<Message | void> {
    const invoice = String(message.payload.invoice);
    if (this.pays(invoice)) {
      this.state.paid.push(invoice);
      await this.checkpoint();
    }
    await this.send("payer", { invoice }, { type: "confirm" });
  }

  /** Whether to pay `invoice` now. */
  protected pays(_invoice: string): boolean {
    return true;
  }
}

/** The fixed bank: the invoice is an idempotency key, paid once. */
export class IdempotentBank extends Bank {
  protected override pays(invoice: string): boolean {
    return !this.state.paid.includes(invoice);
  }
}

/** The root of the system: payer, reconciler and bank, buggy or fixed. */
export function doublePaymentSystem(fixed: boolean): () => Supervisor {
  return () =>
    new Supervisor("payments", {
      children: [new Payer("payer"), new Reconciler("reconciler"), fixed ? new IdempotentBank("bank") : new Bank("bank")],
    });
}

/** The invoices a scenario pays. */
const INVOICES = ["INV-1", "INV-2"] as const;

/** Bug 3 as a property: payments, approvals and sweeps, and what the bank paid. */
export const doublePayment: PlantedBug = {
  title: "a double payment after a resume",
  root: doublePaymentSystem,
  command: fc.oneof(
    fc.record({ invoice: fc.constantFrom(...INVOICES), amount: fc.integer({ min: 1, max: 20_000 }) }).map(
      ({ invoice, amount }): SimulationCommand => ({ label: `pay(${invoice}, ${amount})`, issue: (sim) => sim.ask("payer", "pay", { invoice, amount }) }),
    ),
    fc.constant<SimulationCommand>({ label: "approve", issue: (sim) => sim.resume("payer", "alice@finance") }),
    fc.constant<SimulationCommand>({ label: "sweep", issue: (sim) => sim.ask("reconciler", "sweep") }),
  ),
  check: (view) => {
    const paid = view.agent<Bank>("bank").state.paid;
    const twice = paid.filter((invoice, i) => paid.indexOf(invoice) !== i);
    return twice.length === 0 ? undefined : `paid twice: ${twice.join(", ")} (the bank paid ${paid.join(", ")})`;
  },
  // Asks left waiting on a paused payer stay queued between rounds, as a client's would.
  settle: "idle",
};
