/**
 * Escalation and expiry on the runtime's clock (TestClock): escalation adds
 * the escalation approvers to the current stage and is recorded; expiry
 * denies (decider "expiry") and never approves, also when the deadline
 * passed while the process was down.
 */
import { describe, expect, it } from "vitest";
import { InMemoryStateStore, MemoryAuditSink, type ApprovalView } from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { rejection } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { waitUntil } from "../support/agents.js";
import { Payments, paymentsPolicy, payLarge, startedPayments } from "./fixtures.js";

const runtime = runtimes();

async function onePending(rt: ReturnType<typeof runtime>): Promise<ApprovalView> {
  let views: ApprovalView[] = [];
  await waitUntil(() => {
    void rt.approvals.list({ status: "pending" }).then((v) => (views = v));
    return views.length > 0;
  }, "a pending approval");
  return views[0]!;
}

describe("escalation and expiry", () => {
  it("after escalateAfterMs the manager may vote in the current stage (recorded as approval.escalated); before it she may not", async () => {
    const clock = new TestClock();
    const audit = new MemoryAuditSink();
    const { rt } = await startedPayments(runtime, { clock, auditSink: audit });
    const paying = payLarge(rt, 600_000);
    const request = await onePending(rt);
    expect(request.escalateAt).toBe(new Date(clock.now() + 60_000).toISOString());
    expect((await rejection(rt.approvals.approve(request.approvalId, "maya"))).code).toBe("APPROVER_NOT_ALLOWED");
    await rt.approvals.approve(request.approvalId, "ana");
    await clock.advance(60_000);
    await waitUntil(() => audit.ofType("approval.escalated").length === 1, "the escalation receipt");
    expect(audit.ofType("approval.escalated")[0]?.details).toMatchObject({ approvalId: request.approvalId, digest: request.digest, escalateTo: ["maya"], stage: 0 });
    expect((await rt.approvals.get(request.approvalId)).escalated).toBe(true);
    const approved = await rt.approvals.approve(request.approvalId, "maya");
    expect(approved.status).toBe("approved");
    expect((await paying).payload).toEqual({ paid: true, by: "maya" });
  });

  it("at expiresInMs the request expires: the asker gets APPROVAL_DENIED by 'expiry', onApprovalDenied runs, a late vote is STALE_APPROVAL, nothing is handled", async () => {
    const clock = new TestClock();
    const audit = new MemoryAuditSink();
    const { rt, payments } = await startedPayments(runtime, { clock, auditSink: audit });
    const paying = rejection(payLarge(rt, 600_000));
    const request = await onePending(rt);
    await rt.approvals.approve(request.approvalId, "ana");
    await clock.advance(119_999);
    expect((await rt.approvals.get(request.approvalId)).status).toBe("pending");
    await clock.advance(1);
    const error = (await paying) as Error & { code: string; decider: string };
    expect(error.code).toBe("APPROVAL_DENIED");
    expect(error.decider).toBe("expiry");
    expect((await rt.approvals.get(request.approvalId)).status).toBe("expired");
    expect((await rejection(rt.approvals.approve(request.approvalId, "ben"))).code).toBe("STALE_APPROVAL");
    await waitUntil(() => payments.denied.length === 1, "onApprovalDenied");
    expect(payments.state.paid).toEqual([]);
    expect(audit.ofType("approval.decided").map((e) => [e.details.decision, e.details.decidedBy])).toEqual([["expired", "expiry"]]);
  });

  it("a deadline that passed while the process was down expires the restored request at start", async () => {
    const clock = new TestClock();
    const store = new InMemoryStateStore();
    const first = await whenStarted(runtime(new Payments("payments"), { clock, store, approvalPolicy: paymentsPolicy }));
    void payLarge(first, 600_000).catch(() => undefined);
    const request = await onePending(first);
    await first.stop();
    await clock.advance(500_000); // down for longer than the request's expiry
    const payments = new Payments("payments");
    const audit = new MemoryAuditSink();
    const second = await whenStarted(runtime(payments, { clock, store, approvalPolicy: paymentsPolicy, auditSink: audit }));
    await clock.advance(0);
    await waitUntil(() => audit.ofType("approval.decided").length === 1, "the expiry on restore");
    const after = await second.approvals.get(request.approvalId);
    expect(after.status).toBe("expired");
    expect(after.decidedBy).toBe("expiry");
    expect(payments.denied.map((v) => v.approvalId)).toEqual([request.approvalId]);
    expect(payments.state.paid).toEqual([]);
  });
});
