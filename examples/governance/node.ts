/**
 * One process of the governance demo (run.ts starts it, and kills it):
 *
 *   node --import tsx examples/governance/node.ts <hold|decide> <database> <audit log>
 *
 * hold    asks for a large payment (held for approval), shows the agent keep
 *         serving balance queries, and waits to be killed
 * decide  restores the held payment, takes two votes (one from the manager,
 *         after the escalation), shows the payment handled once, and a
 *         denied payment the sender sees
 */
import type { CivitasError} from "civitas-ts";
import { AgentProcess, Runtime, type Message } from "civitas-ts";
import { JsonlAuditSink } from "civitas-ts/audit";
import { SqliteStateStore } from "civitas-ts/sqlite";
import { PAYMENT_RULES, policyFromTable } from "./policy-table.js";

import { AUDIT_KEY } from "./audit-key.js";

class Payments extends AgentProcess<{ balanceCents: number; paid: { id: string; to: string; amountCents: number; approvedBy: string | null }[] }> {
  override state = { balanceCents: 5_000_000, paid: [] as { id: string; to: string; amountCents: number; approvedBy: string | null }[] };
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "balance") return this.reply({ balanceCents: this.state.balanceCents });
    const { to, amountCents } = message.payload as { to: string; amountCents: number };
    if (this.state.paid.some((p) => p.id === message.id)) return this.reply({ paid: false, duplicate: true });
    this.state.balanceCents -= amountCents;
    const approvedBy = this.approval === undefined ? null : this.approval.votes.map((v) => v.approver).join(" + ");
    this.state.paid.push({ id: message.id, to, amountCents, approvedBy });
    await this.checkpoint();
    console.log(`[payments] paid ${(amountCents / 100).toFixed(2)} to ${to}${approvedBy === null ? "" : ` (approved by ${approvedBy})`}`);
    return this.reply({ paid: true });
  }
}

const [mode, file, log] = process.argv.slice(2);
const store = new SqliteStateStore(file!);
const audit = new JsonlAuditSink(log!, { key: AUDIT_KEY });
const payments = new Payments("payments");
const runtime = new Runtime({ root: payments, store, auditSink: audit, approvalPolicy: policyFromTable(PAYMENT_RULES), keepAlive: false });
await runtime.start();
const say = (line: string): void => console.log(`[${mode}] ${line}`);

if (mode === "hold") {
  runtime.on("approval.changed", (view) => {
    if (view.status === "pending" && view.votes.length === 0) say(`held ${view.message.type} ${JSON.stringify(view.message.payload)} for approval ${view.approvalId}: ${view.reason}`);
  });
  void runtime.ask("payments", { to: "ACME GmbH", amountCents: 2_500_000 }, { type: "pay", timeoutMs: 120_000 }).catch(() => undefined);
  while ((await runtime.approvals.list({ status: "pending" })).length === 0) await new Promise((r) => setTimeout(r, 10));
  const balance = await runtime.ask("payments", {}, { type: "balance" });
  say(`while the payment waits, the agent serves a balance query: ${(Number(balance.payload.balanceCents) / 100).toFixed(2)}`);
  say("ready to be killed");
  await new Promise(() => undefined);
} else {
  const [held] = await runtime.approvals.list({ status: "pending" });
  if (held === undefined) throw new Error("no held payment was restored");
  say(`restored after SIGKILL: approval ${held.approvalId} is ${held.status}, digest ${held.digest.slice(0, 16)}…`);
  await runtime.approvals.approve(held.approvalId, "ana@finance", { reason: "invoice matches the order" });
  say("ana@finance approved (1 of 2)");
  if (!(await runtime.approvals.get(held.approvalId)).escalated) {
    try {
      await runtime.approvals.approve(held.approvalId, "maya@management");
    } catch (error) {
      say(`maya@management before the escalation: ${(error as CivitasError).code}`);
    }
  }
  while (!(await runtime.approvals.get(held.approvalId)).escalated) await new Promise((r) => setTimeout(r, 50));
  say("escalated: the manager may now vote in the finance stage");
  const approved = await runtime.approvals.approve(held.approvalId, "maya@management");
  say(`maya@management approved: ${approved.status}`);
  await runtime.ask("payments", {}, { type: "balance" }); // the released payment is handled before this
  say(`paid exactly once: ${payments.state.paid.length} payment(s) in the ledger`);
  try {
    await runtime.approvals.approve(held.approvalId, "ben@finance");
  } catch (error) {
    say(`the same approval again: ${(error as CivitasError).code}`);
  }
  const asking = runtime.ask("payments", { to: "Consultancy Ltd", amountCents: 4_000_000 }, { type: "pay", timeoutMs: 60_000 });
  let second = (await runtime.approvals.list({ status: "pending" }))[0];
  while (second === undefined) {
    await new Promise((r) => setTimeout(r, 10));
    second = (await runtime.approvals.list({ status: "pending" }))[0];
  }
  await runtime.approvals.deny(second.approvalId, "ben@finance", { reason: "no purchase order" });
  try {
    await asking;
  } catch (error) {
    const denied = error as CivitasError & { decider: string; reason: string };
    say(`the sender of the second payment sees ${denied.code}: decider ${denied.decider}, reason "${denied.reason}"`);
  }
  try {
    await runtime.ask("payments", { to: "SANCTIONED LTD", amountCents: 100 }, { type: "pay" });
  } catch (error) {
    say(`a payment to a sanctioned payee: ${(error as CivitasError).code} by the policy table`);
  }
  console.log(`APPROVALS ${JSON.stringify([held.approvalId, second.approvalId])}`);
  await runtime.stop();
  await audit.close();
  await store.close();
}
