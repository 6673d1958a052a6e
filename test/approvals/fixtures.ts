/** Agents, rules and policies shared by the approval tests. */
import { AgentProcess, type ApprovalPolicy, type ApprovalRule, type ApprovalView, type Message, type Runtime, type RuntimeOptions } from "../../src/index.js";
import { whenStarted, type RuntimeFactory } from "../support/runtimes.js";

/** Two of three finance approvers, escalating to a manager. */
export const FINANCE: ApprovalRule = Object.freeze({
  stages: [{ name: "finance", approvers: ["ana", "ben", "cy"], min: 2 }],
  escalateAfterMs: 60_000,
  escalateTo: ["maya"],
  expiresInMs: 120_000,
});

const ALLOW = Object.freeze({ decision: "allow" } as const);

/** Payments of 1,000.00 or more need {@link FINANCE}; a payment to "blocked" is denied; anything else is allowed. */
export const paymentsPolicy: ApprovalPolicy = ({ message }) => {
  if (message.type !== "pay") return ALLOW;
  if (message.payload.to === "blocked") return { decision: "deny", reason: "payee is blocked" };
  return Number(message.payload.amountCents) >= 100_000 ? { decision: "require_approval", reason: "large payment", rule: FINANCE } : ALLOW;
};

/** Pays (records each payment in its state, once per message id) and answers balance queries. */
export class Payments extends AgentProcess<{ paid: string[]; balanceCents: number }> {
  override state = { paid: [] as string[], balanceCents: 1_000_000 };
  /** The approval each handled payment came with. */
  readonly approvals: (ApprovalView | undefined)[] = [];
  readonly denied: ApprovalView[] = [];
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "balance") return this.reply({ balanceCents: this.state.balanceCents });
    this.state.paid.push(message.id);
    this.state.balanceCents -= Number(message.payload.amountCents);
    this.approvals.push(this.approval);
    await this.checkpoint();
    return this.reply({ paid: true, by: this.approval?.decidedBy ?? null });
  }
  override async onApprovalDenied(approval: ApprovalView): Promise<void> {
    this.denied.push(approval);
  }
}

/** Holds every payment of 1,000.00 or more itself, from its handler (no policy). */
export class SelfHeldPayments extends Payments {
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "pay" && this.approval === undefined && Number(message.payload.amountCents) >= 100_000) {
      this.requireApproval({ reason: "large payment (handler)", rule: FINANCE });
      return;
    }
    return super.handle(message);
  }
}

/** Asks "payments" to pay 2,500.00 to ACME: {@link paymentsPolicy} holds it for {@link FINANCE}; the reply comes once it is paid. */
export function payLarge(rt: Runtime, timeoutMs: number): Promise<Message> {
  return rt.ask("payments", { amountCents: 250_000, to: "ACME" }, { type: "pay", timeoutMs });
}

/** A {@link Payments} agent ("payments") alone on a started runtime from `runtime`, under {@link paymentsPolicy} unless `options` names another. */
export async function startedPayments(runtime: RuntimeFactory, options: Partial<RuntimeOptions> = {}): Promise<{ rt: Runtime; payments: Payments }> {
  const payments = new Payments("payments");
  const rt = await whenStarted(runtime(payments, { approvalPolicy: paymentsPolicy, ...options }));
  return { rt, payments };
}
