/**
 * The approval routes (SPEC §12.6) against the real `runtime.approvals`: a
 * held payment listed with its payload, rule and who may still vote; a
 * two-stage rule moving on; the action handled exactly once; a deny whose
 * reason reaches the asker; the votes checked against the rule; the audit
 * trail verified offline; the change stream.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/entries/audit.js";
import { CivitasError, type JsonObject, type Message, type Runtime } from "../../src/index.js";
import { runtimes } from "../support/runtimes.js";
import { scratch } from "../support/scratch.js";
import { eventually, headerIdentity, inboxes, signIn, Treasury, treasuryPolicy } from "./support.js";

const KEY = "approval-routes-key";
const { tempDir, track } = scratch("civitas-http-approvals-");
const runtime = runtimes();
const serve = inboxes();

interface Item {
  approvalId: string;
  agent: string;
  status: string;
  stage: number;
  consumed: boolean;
  message: { type: string; payload: Record<string, unknown> };
  mayStillVote: string[];
  votes: { approver: string; vote: string; stage: number }[];
  decidedBy?: string;
  decisionReason?: string;
}

async function heldPayment(): Promise<{ rt: Runtime; treasury: Treasury; asked: Promise<Message>; url: string; log: string; sink: JsonlAuditSink }> {
  const log = path.join(tempDir(), "audit.jsonl");
  const sink = track(new JsonlAuditSink(log, { key: KEY }));
  const treasury = new Treasury("treasury");
  const rt = runtime([treasury], { auditSink: sink, approvalPolicy: treasuryPolicy });
  await rt.start();
  const asked = rt.ask("treasury", { amountCents: 250_000, to: "acme", memo: "x".repeat(300) }, { type: "pay", timeoutMs: 15_000 });
  asked.catch(() => undefined);
  await eventually(async () => (await rt.approvals.list({ status: "pending" })).length === 1, "the held payment");
  const server = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: log, key: KEY } });
  return { rt, treasury, asked, url: server.url, log, sink };
}

describe("approval routes", () => {
  it("lists the held payment with its payload, rule and who may still vote, and shows one by id", async () => {
    const { url } = await heldPayment();
    const ana = await signIn(url, "ana");
    const list = await ana.get("/api/v1/approvals?status=pending");
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ scope: "local", total: 1 });
    const [item] = list.json.items as Item[];
    expect(item).toMatchObject({ agent: "treasury", status: "pending", stage: 0, message: { type: "pay", payload: { amountCents: 250_000, to: "acme" } }, mayStillVote: ["ana", "ben"] });
    const one = await ana.get(`/api/v1/approvals/${item?.approvalId ?? ""}`);
    expect(one.json).toEqual(item);
    const missing = await ana.get("/api/v1/approvals/0190f3a0-0000-7000-8000-000000000000");
    expect([missing.status, missing.json.error?.code]).toEqual([404, "APPROVAL_NOT_FOUND"]);
    expect((await ana.get("/api/v1/approvals?status=approved")).json.total).toBe(0);
    const bad = await ana.get("/api/v1/approvals?status=maybe");
    expect([bad.status, bad.json.error?.code]).toEqual([400, "INVALID_REQUEST"]);
  });

  it("moves a two-stage rule on, refuses votes the stage does not accept, and handles the payment exactly once", async () => {
    const { rt, treasury, asked, url } = await heldPayment();
    const [view] = await rt.approvals.list({ status: "pending" });
    const id = view?.approvalId ?? "";
    const ana = await signIn(url, "ana");
    const carol = await signIn(url, "carol");
    const early = await carol.post(`/api/v1/approvals/${id}/approve`, {});
    expect([early.status, early.json.error?.code]).toEqual([403, "APPROVER_NOT_ALLOWED"]);
    const first = await ana.post(`/api/v1/approvals/${id}/approve`, { reason: "invoice matches" });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ status: "pending", stage: 1, mayStillVote: ["carol"], votes: [{ approver: "ana", vote: "approve", stage: 0 }] });
    const ben = await signIn(url, "ben");
    const late = await ben.post(`/api/v1/approvals/${id}/approve`, {});
    expect([late.status, late.json.error?.code]).toEqual([403, "APPROVER_NOT_ALLOWED"]);
    const named = await ben.post(`/api/v1/approvals/${id}/approve`, { approver: "carol" });
    expect([named.status, named.json.error?.code]).toEqual([422, "INVALID_ARGUMENT"]);
    const second = await carol.post(`/api/v1/approvals/${id}/approve`, {});
    expect(second.json).toMatchObject({ status: "approved", decidedBy: "carol", mayStillVote: [] });
    const reply = await asked;
    expect(reply.payload).toEqual({ paid: 250_000, approvedBy: "carol" });
    expect([...treasury.handled.values()]).toEqual([1]);
    const again = await carol.post(`/api/v1/approvals/${id}/approve`, {});
    expect([again.status, again.json.error?.code]).toEqual([409, "STALE_APPROVAL"]);
    expect([...treasury.handled.values()]).toEqual([1]);
    await eventually(async () => (await rt.approvals.get(id)).consumed, "consumed");
  });

  it("denies with a reason that reaches the asker, and refuses a deny without one", async () => {
    const { rt, treasury, asked, url } = await heldPayment();
    const [view] = await rt.approvals.list({ status: "pending" });
    const id = view?.approvalId ?? "";
    const ben = await signIn(url, "ben");
    const noReason = await ben.post(`/api/v1/approvals/${id}/deny`, {});
    expect([noReason.status, noReason.json.error?.code]).toEqual([422, "INVALID_ARGUMENT"]);
    const denied = await ben.post(`/api/v1/approvals/${id}/deny`, { reason: "acme is not a vendor" });
    expect(denied.json).toMatchObject({ status: "denied", decidedBy: "ben", decisionReason: "acme is not a vendor" });
    const error = await asked.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(CivitasError);
    expect((error as CivitasError).code).toBe("APPROVAL_DENIED");
    expect((error as CivitasError).message).toContain("acme is not a vendor");
    expect(treasury.handled.size).toBe(0);
  });

  it("shows the audit trail of a decided request verified offline, and the decision in the history", async () => {
    const { rt, url, sink } = await heldPayment();
    const [view] = await rt.approvals.list({ status: "pending" });
    const id = view?.approvalId ?? "";
    const ana = await signIn(url, "ana");
    const carol = await signIn(url, "carol");
    const pending = await ana.get(`/api/v1/approvals/${id}/audit`);
    expect(pending.json).toMatchObject({ approvalId: id, verification: { status: "pending" }, chain: { ok: true } });
    await ana.post(`/api/v1/approvals/${id}/approve`, {});
    await carol.post(`/api/v1/approvals/${id}/approve`, {});
    // the approval.consumed receipt follows the handling
    await eventually(async () => (await ana.get(`/api/v1/approvals/${id}/audit`)).json.verification !== undefined && ((await ana.get(`/api/v1/approvals/${id}/audit`)).json.verification as { handled: boolean }).handled, "the consumed receipt");
    const trail = await ana.get(`/api/v1/approvals/${id}/audit`);
    expect(trail.json).toMatchObject({ verification: { status: "verified", decision: "approved", decidedBy: "carol", handled: true } });
    expect((trail.json.rows as { event: string }[]).map((r) => r.event)).toEqual(["approval.requested", "approval.voted", "approval.voted", "approval.decided", "approval.consumed"]);
    const history = await ana.get("/api/v1/history");
    expect(history.json.items).toEqual([expect.objectContaining({ kind: "approval", agent: "treasury", approvalId: id, type: "pay", decision: "approved", decidedBy: "carol", status: "verified" })]);
    // A decision's receipt appended again, identical (as a restart after a crash re-emits it), is listed once and still verifies.
    const decided = (trail.json.rows as { event: string; agent: string; details: JsonObject }[]).find((r) => r.event === "approval.decided")!;
    await sink.emit({ event: decided.event, ts: new Date().toISOString(), agent: decided.agent, signerId: "civitas-runtime", details: decided.details });
    const again = await ana.get("/api/v1/history");
    expect(again.json.items).toEqual([expect.objectContaining({ approvalId: id, decision: "approved", status: "verified" })]);
    const unknown = await ana.get("/api/v1/approvals/no-such/audit");
    expect([unknown.status, unknown.json.error?.code]).toEqual([404, "AUDIT_RECORD_NOT_FOUND"]);
  });
});
