import { describe, expect, it } from "vitest";
import { actionDigest, MemoryAuditSink, type ApprovalView } from "../../src/index.js";
import { rejection } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { waitUntil } from "../support/agents.js";
import { FINANCE, Payments, paymentsPolicy, SelfHeldPayments, payLarge, startedPayments } from "./fixtures.js";
import { testTracing } from "../support/tracing.js";

const runtime = runtimes();

async function pending(rt: ReturnType<typeof runtime>, count = 1): Promise<ApprovalView[]> {
  let views: ApprovalView[] = [];
  await waitUntil(() => {
    void rt.approvals.list({ status: "pending" }).then((v) => (views = v));
    return views.length >= count;
  }, "a pending approval");
  return views;
}

describe("the policy gate holds one action, not the agent", () => {
  it("a large payment waits for two finance approvers while balance queries are served; then it is handled once with its approval", async () => {
    const audit = new MemoryAuditSink();
    const payments = new Payments("payments");
    const rt = runtime(payments, { approvalPolicy: paymentsPolicy, auditSink: audit });
    const changes: ApprovalView[] = [];
    rt.on("approval.changed", (view) => changes.push(view));
    await rt.start();
    const paying = payLarge(rt, 10_000);
    const [request] = await pending(rt);
    expect(request!.agent).toBe("payments");
    expect(request!.digest).toBe(actionDigest("payments", "pay", { amountCents: 250_000, to: "ACME" }));
    expect(request!.rule).toEqual(FINANCE);
    expect(request!.message.type).toBe("pay");
    // The agent goes on serving.
    const balance = await rt.ask("payments", {}, { type: "balance" });
    expect(balance.payload).toEqual({ balanceCents: 1_000_000 });
    const afterFirst = await rt.approvals.approve(request!.approvalId, "ana", { reason: "invoice checked" });
    expect(afterFirst.status).toBe("pending");
    // The same approver twice counts once.
    expect((await rt.approvals.approve(request!.approvalId, "ana")).votes).toHaveLength(1);
    const approved = await rt.approvals.approve(request!.approvalId, "ben");
    expect(approved.status).toBe("approved");
    expect(approved.decidedBy).toBe("ben");
    const reply = await paying;
    expect(reply.payload).toEqual({ paid: true, by: "ben" });
    expect(payments.state.paid).toHaveLength(1);
    expect(payments.approvals[0]?.approvalId).toBe(request!.approvalId);
    expect(payments.approvals[0]?.votes.map((v) => v.approver)).toEqual(["ana", "ben"]);
    await waitUntil(() => changes.some((c) => c.consumed), "consumption reported");
    expect((await rt.approvals.get(request!.approvalId)).consumed).toBe(true);
    const events = audit.events.filter((e) => e.event.startsWith("approval.")).map((e) => e.event);
    expect(events).toEqual(["approval.requested", "approval.voted", "approval.voted", "approval.decided", "approval.consumed"]);
    for (const e of audit.events.filter((e) => e.event.startsWith("approval."))) {
      expect(e.details.approvalId).toBe(request!.approvalId);
      expect(e.details.digest).toBe(request!.digest);
    }
    // A used approval is not used again.
    expect((await rejection(rt.approvals.approve(request!.approvalId, "cy"))).code).toBe("STALE_APPROVAL");
  });

  it("a deny ends the request: the asker gets APPROVAL_DENIED with the reason and decider, onApprovalDenied runs, nothing is handled", async () => {
    const { rt, payments } = await startedPayments(runtime);
    const paying = rt.ask("payments", { amountCents: 500_000, to: "ACME" }, { type: "pay", timeoutMs: 10_000 });
    const [request] = await pending(rt);
    await rt.approvals.approve(request!.approvalId, "ana");
    const denied = await rt.approvals.deny(request!.approvalId, "cy", { reason: "duplicate invoice" });
    expect(denied.status).toBe("denied");
    const error = (await rejection(paying)) as Error & { code: string; decider: string; reason: string };
    expect(error.code).toBe("APPROVAL_DENIED");
    expect(error.decider).toBe("cy");
    expect(error.reason).toBe("duplicate invoice");
    expect(payments.state.paid).toEqual([]);
    await waitUntil(() => payments.denied.length === 1, "onApprovalDenied");
    expect(payments.denied[0]?.decisionReason).toBe("duplicate invoice");
    expect((await rejection(rt.approvals.approve(request!.approvalId, "ben"))).code).toBe("STALE_APPROVAL");
  });

  it("a policy's deny rejects the asker and is a signed policy.denied event with the digest; a policy that throws denies with POLICY_FAILED", async () => {
    const audit = new MemoryAuditSink();
    const payments = new Payments("payments");
    let explode = false;
    const rt = runtime(payments, {
      auditSink: audit,
      approvalPolicy: (action) => {
        if (explode) throw new Error("rules did not load");
        return paymentsPolicy(action);
      },
    });
    await rt.start();
    const denied = await rejection(rt.ask("payments", { amountCents: 100, to: "blocked" }, { type: "pay" }));
    expect(denied.code).toBe("APPROVAL_DENIED");
    expect((denied as unknown as { decider: string }).decider).toBe("policy");
    const [row] = audit.ofType("policy.denied");
    expect(row?.details.reason).toBe("payee is blocked");
    expect(row?.details.digest).toBe(actionDigest("payments", "pay", { amountCents: 100, to: "blocked" }));
    explode = true;
    expect((await rejection(rt.ask("payments", {}, { type: "balance" }))).code).toBe("POLICY_FAILED");
    expect(audit.ofType("policy.denied")[1]?.details.error).toBe("POLICY_FAILED");
    expect(payments.state.paid).toEqual([]);
  });

  it.each([
    ["an answer without a decision", () => ({})],
    ["an unknown decision", () => ({ decision: "maybe", reason: "x" })],
    ["a deny without a reason", () => ({ decision: "deny" })],
    ["a malformed rule", () => ({ decision: "require_approval", reason: "r", rule: { stages: [{ approvers: ["a"], min: 2 }] } })],
    ["a promise of a rejection", () => Promise.reject(new Error("down"))],
    ["null", () => null],
  ])("a policy that answers %s denies the message (fail closed, POLICY_FAILED)", async (_name, answer) => {
    const payments = new Payments("payments");
    const rt = await whenStarted(runtime(payments, { approvalPolicy: answer as never }));
    expect((await rejection(rt.ask("payments", { amountCents: 1 }, { type: "pay" }))).code).toBe("POLICY_FAILED");
    expect(payments.state.paid).toEqual([]);
  });

  it("an agent's own approvalPolicy option replaces the runtime's, and null turns it off", async () => {
    const gated = new Payments("gated", { approvalPolicy: () => ({ decision: "deny", reason: "own policy" }) });
    const free = new Payments("free", { approvalPolicy: null });
    const rt = await whenStarted(runtime([gated, free], { approvalPolicy: () => ({ decision: "deny", reason: "runtime policy" }) }));
    expect((await rejection(rt.ask("gated", {}, { type: "balance" }))).message).toContain("own policy");
    expect((await rt.ask("free", {}, { type: "balance" })).payload).toEqual({ balanceCents: 1_000_000 });
  });

  it("a handler holds its current message with requireApproval(); after approval the same message comes back once", async () => {
    const payments = new SelfHeldPayments("payments");
    const rt = await whenStarted(runtime(payments));
    const paying = rt.ask("payments", { amountCents: 300_000, to: "ACME" }, { type: "pay", timeoutMs: 10_000 });
    const [request] = await pending(rt);
    expect(request!.reason).toBe("large payment (handler)");
    expect((await rt.ask("payments", { amountCents: 10, to: "x" }, { type: "pay" })).payload).toEqual({ paid: true, by: null });
    await rt.approvals.approve(request!.approvalId, "ana");
    await rt.approvals.approve(request!.approvalId, "cy");
    expect((await paying).payload).toEqual({ paid: true, by: "cy" });
    expect(payments.state.paid).toHaveLength(2);
  });
});

describe("who may decide", () => {
  it("refuses, with coded errors and before any effect, a bad approver, an unknown id, and an approver the stage does not accept (recorded as refused)", async () => {
    const audit = new MemoryAuditSink();
    const { rt } = await startedPayments(runtime, { auditSink: audit });
    void payLarge(rt, 10_000).catch(() => undefined);
    const [request] = await pending(rt);
    expect((await rejection(rt.approvals.approve(request!.approvalId, "  "))).code).toBe("INVALID_APPROVER");
    expect((await rejection(rt.approvals.approve(request!.approvalId, "ana\u202E"))).code).toBe("INVALID_APPROVER");
    expect((await rejection(rt.approvals.approve("0000-not-an-id", "ana"))).code).toBe("APPROVAL_NOT_FOUND");
    expect((await rejection(rt.approvals.get(request!.approvalId.toUpperCase()))).code).toBe("APPROVAL_NOT_FOUND");
    expect((await rejection(rt.approvals.approve(request!.approvalId, "maya"))).code).toBe("APPROVER_NOT_ALLOWED");
    expect((await rejection(rt.approvals.deny(request!.approvalId, "mallory", { reason: "no" }))).code).toBe("APPROVER_NOT_ALLOWED");
    const refused = audit.ofType("approval.voted").map((e) => [e.details.approver, e.details.accepted, e.details.refusal]);
    expect(refused).toEqual([
      ["maya", false, "APPROVER_NOT_ALLOWED"],
      ["mallory", false, "APPROVER_NOT_ALLOWED"],
    ]);
    expect((await rt.approvals.get(request!.approvalId)).votes).toEqual([]);
  });

  it("authorizeApproval may refuse a vote (RESUME_REFUSED); the vote is not counted", async () => {
    const { rt } = await startedPayments(runtime, { authorizeApproval: (_view, who) => who !== "ben" });
    void payLarge(rt, 10_000).catch(() => undefined);
    const [request] = await pending(rt);
    expect((await rejection(rt.approvals.approve(request!.approvalId, "ben"))).code).toBe("RESUME_REFUSED");
    expect((await rt.approvals.get(request!.approvalId)).votes).toEqual([]);
  });
});

describe("traces", () => {
  it("the span of the held message and the span of its handling after approval carry the approval id and the same message id", async () => {
    const tracing = testTracing();
    const { rt } = await startedPayments(runtime, { tracerProvider: tracing.provider });
    const paying = payLarge(rt, 10_000);
    const [request] = await pending(rt);
    await rt.approvals.approve(request!.approvalId, "ana");
    await rt.approvals.approve(request!.approvalId, "ben");
    await paying;
    const spans = tracing.exporter.getFinishedSpans().filter((s) => s.name === "civitas.agent.handle" && s.attributes["civitas.approval.id"] === request!.approvalId);
    expect(spans).toHaveLength(2);
    expect(spans[0]!.attributes["civitas.policy.decision"]).toBe("require_approval");
    expect(spans[0]!.attributes["civitas.message.id"]).toBe(spans[1]!.attributes["civitas.message.id"]);
    expect(spans[0]!.spanContext().spanId).not.toBe(spans[1]!.spanContext().spanId);
  });
});
