/**
 * An agent removed for good cancels its pending approval requests on the
 * record (issue 24 §7): `approval.decided` with decision `cancelled`, the
 * asker rejected with APPROVAL_DENIED (outcome `cancelled`), nothing handled.
 */
import { describe, expect, it } from "vitest";
import { APPROVALS_KEY, DynamicSupervisor, InMemoryStateStore, MemoryAuditSink, Supervisor, type JsonObject } from "../../src/index.js";
import { ApprovalDeniedError } from "../../src/approvals/approval-errors.js";
import { rejection } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { waitUntil } from "../support/agents.js";
import { Payments, paymentsPolicy, payLarge } from "./fixtures.js";

const runtime = runtimes();

describe("a removed agent's pending approval requests", () => {
  it("are cancelled on the record when it is despawned: the waiting asker rejects with APPROVAL_DENIED (cancelled, by the supervisor), nothing is handled, a new agent of the name restores none pending", async () => {
    const store = new InMemoryStateStore();
    const audit = new MemoryAuditSink();
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const rt = await whenStarted(runtime(new Supervisor("root", { children: [dyn] }), { store, auditSink: audit, approvalPolicy: paymentsPolicy }));
    const payments = await dyn.spawn(Payments, "payments");
    const paying = payLarge(rt, 30_000);
    const asked = rejection(paying);
    await waitUntil(() => audit.ofType("approval.requested").length === 1, "the request");
    const approvalId = audit.ofType("approval.requested")[0]!.details.approvalId as string;
    // A second request that was decided already is left as it is.
    const denied = rejection(rt.ask("payments", { amountCents: 300_000, to: "ACME" }, { type: "pay", timeoutMs: 30_000 }));
    await waitUntil(() => audit.ofType("approval.requested").length === 2, "the second request");
    const deniedId = audit.ofType("approval.requested")[1]!.details.approvalId as string;
    await rt.approvals.deny(deniedId, "ana", { reason: "no" });
    expect((await denied).code).toBe("APPROVAL_DENIED");

    await dyn.despawn("payments");

    const error = await asked;
    expect(error).toBeInstanceOf(ApprovalDeniedError);
    expect(error).toMatchObject({ code: "APPROVAL_DENIED", approvalId, decider: "dyn", outcome: "cancelled" });
    expect(error.message).toContain("cancelled by 'dyn'");
    expect(error.message).toContain("despawned");
    const decided = audit.ofType("approval.decided");
    expect(decided.map((e) => [e.details.approvalId, e.details.decision, e.details.decidedBy])).toEqual([
      [deniedId, "denied", "ana"],
      [approvalId, "cancelled", "dyn"],
    ]);
    expect(payments.state.paid).toEqual([]);
    const stored = (await store.get("payments"))![APPROVALS_KEY] as JsonObject[];
    expect(stored.map((r) => [r.approvalId, r.status, r.receipts])).toEqual([
      [approvalId, "cancelled", undefined],
      [deniedId, "denied", undefined],
    ]);

    const again = await dyn.spawn(Payments, "payments");
    expect(await rt.approvals.list({ status: "pending" })).toEqual([]);
    expect((await rt.approvals.get(approvalId)).status).toBe("cancelled");
    await expect(rt.approvals.approve(approvalId, "ana")).rejects.toMatchObject({ code: "STALE_APPROVAL" });
    await rt.ask("payments", {}, { type: "balance" });
    expect(again.state.paid).toEqual([]);
  });

  it("are left alone when the whole runtime stops: a restart restores them pending", async () => {
    const store = new InMemoryStateStore();
    const audit = new MemoryAuditSink();
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const rt = await whenStarted(runtime(new Supervisor("root", { children: [dyn] }), { store, auditSink: audit, approvalPolicy: paymentsPolicy }));
    await dyn.spawn(Payments, "payments");
    void payLarge(rt, 30_000).catch(() => undefined);
    await waitUntil(() => audit.ofType("approval.requested").length === 1, "the request");
    await rt.stop();
    expect(audit.ofType("approval.decided")).toEqual([]);
    expect(((await store.get("payments"))![APPROVALS_KEY] as JsonObject[]).map((r) => r.status)).toEqual(["pending"]);
  });
});
