/**
 * An approval releases the action it was given for and nothing else (issue 24
 * §4): each case is one attempt by an in-process attacker — change the held
 * message, replay an approval, approve with a lookalike id, vote as an
 * approver of another stage, forge a vote or an approved request. None may
 * handle a payment that was not approved, or handle one twice.
 */
import { afterAll, describe, expect, it } from "vitest";
import { APPROVALS_KEY, createMessage, InMemoryStateStore, MemoryAuditSink, type ApprovalView, type JsonObject, type Message } from "../../src/index.js";
import { rejection } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { turns, waitUntil } from "../support/agents.js";
import { Payments, paymentsPolicy, payLarge } from "./fixtures.js";

const runtime = runtimes();
const tally = { tried: 0, succeeded: [] as string[] };
afterAll(() => {
  console.info(`approval forgery attempts: ${tally.tried} tried, ${tally.succeeded.length} succeeded${tally.succeeded.length > 0 ? `: ${tally.succeeded.join("; ")}` : ""}`);
});

/** Counts the attempt, and records it as a success when `held` is false (something was handled that must not be). */
function attempt(name: string, held: boolean): void {
  tally.tried++;
  if (!held) tally.succeeded.push(name);
  expect(held, name).toBe(true);
}

async function pendingOf(rt: ReturnType<typeof runtime>, count = 1): Promise<ApprovalView[]> {
  let views: ApprovalView[] = [];
  await waitUntil(() => {
    void rt.approvals.list({ status: "pending" }).then((v) => (views = v));
    return views.length >= count;
  }, `${count} pending approval(s)`);
  return views;
}

const TWO_STAGES = { stages: [{ approvers: ["ana", "ben"], min: 1 }, { approvers: ["dan"], min: 1 }] };

async function heldPayment(options: { store?: InMemoryStateStore; policy?: typeof paymentsPolicy } = {}) {
  const payments = new Payments("payments");
  const store = options.store ?? new InMemoryStateStore();
  const rt = await whenStarted(runtime(payments, { store, approvalPolicy: options.policy ?? paymentsPolicy }));
  void payLarge(rt, 30_000).catch(() => undefined);
  const [request] = await pendingOf(rt);
  return { rt, payments, store, request: request! };
}

describe("forged approvals", () => {
  it("the held message changed in the store while it waited (then restored): the deciding vote is refused with APPROVAL_DIGEST_MISMATCH and nothing is paid", async () => {
    const { rt, store, request } = await heldPayment();
    await rt.stop();
    const state = (await store.get("payments"))!;
    const records = state[APPROVALS_KEY] as JsonObject[];
    const wire = records[0]!.wire as JsonObject;
    (wire.payload as JsonObject).to = "MALLORY";
    await store.set("payments", state);
    const payments = new Payments("payments");
    const again = await whenStarted(runtime(payments, { store, approvalPolicy: paymentsPolicy }));
    await again.approvals.approve(request.approvalId, "ana");
    const error = await rejection(again.approvals.approve(request.approvalId, "ben"));
    expect(error.code).toBe("APPROVAL_DIGEST_MISMATCH");
    expect((await again.approvals.get(request.approvalId)).status).toBe("cancelled");
    await again.ask("payments", {}, { type: "balance" });
    attempt("mutate the stored held message", payments.state.paid.length === 0);
  });

  it("the views handed out are frozen: changing a view's payload changes nothing held", async () => {
    const { rt, payments, request } = await heldPayment();
    expect(() => {
      (request.message.payload as JsonObject).to = "MALLORY";
    }).toThrow(TypeError);
    await rt.approvals.approve(request.approvalId, "ana");
    await rt.approvals.approve(request.approvalId, "ben");
    await waitUntil(() => payments.state.paid.length === 1, "the payment");
    attempt("mutate the view's payload", (await rt.approvals.get(request.approvalId)).message.payload.constructor === Object && (request.message.payload as JsonObject).to === "ACME");
  });

  it("user code writing an approved request under APPROVALS_KEY and checkpointing is overwritten: nothing is released, before or after a restart", async () => {
    class Forger extends Payments {
      override async handle(message: Message): Promise<Message | void> {
        if (message.type === "forge") {
          const state = this.state as unknown as JsonObject;
          state[APPROVALS_KEY] = [{ ...(message.payload.record as JsonObject), status: "approved", votes: [{ approver: "ana", vote: "approve", stage: 0, at: "2026-01-01T00:00:00.000Z" }, { approver: "ben", vote: "approve", stage: 0, at: "2026-01-01T00:00:00.000Z" }], stage: 1 }];
          await this.checkpoint();
          return;
        }
        return super.handle(message);
      }
    }
    const store = new InMemoryStateStore();
    const forger = new Forger("payments");
    const rt = await whenStarted(runtime(forger, { store, approvalPolicy: paymentsPolicy }));
    void payLarge(rt, 30_000).catch(() => undefined);
    const [request] = await pendingOf(rt);
    const stored = ((await store.get("payments"))![APPROVALS_KEY] as JsonObject[])[0]!;
    await rt.send("payments", { record: stored }, { type: "forge" });
    await rt.ask("payments", {}, { type: "balance" });
    expect(((await store.get("payments"))![APPROVALS_KEY] as JsonObject[])[0]!.status).toBe("pending");
    await rt.stop();
    const restored = new Payments("payments");
    const again = await whenStarted(runtime(restored, { store, approvalPolicy: paymentsPolicy }));
    await again.ask("payments", {}, { type: "balance" });
    expect((await again.approvals.get(request!.approvalId)).status).toBe("pending");
    attempt("forge an approved record in state", forger.state.paid.length === 0 && restored.state.paid.length === 0);
  });

  it("receipts planted in the stored record (a vote it does not hold, an approval it does not show) are not signed at restore", async () => {
    const { rt, store, request } = await heldPayment();
    await rt.approvals.approve(request.approvalId, "ana");
    await rt.stop();
    const state = (await store.get("payments"))!;
    const record = (state[APPROVALS_KEY] as JsonObject[])[0]!;
    const base = { approvalId: request.approvalId, digest: request.digest, at: new Date().toISOString() };
    record.receipts = [
      { event: "approval.voted", details: { ...base, receiptId: "01900000-0000-7000-8000-00000000000a", approver: "cy", vote: "approve", stage: 0, accepted: true } },
      { event: "approval.decided", details: { ...base, receiptId: "01900000-0000-7000-8000-00000000000b", decision: "approved", decidedBy: "cy" } },
    ];
    await store.set("payments", state);
    const audit = new MemoryAuditSink();
    const payments = new Payments("payments");
    const again = await whenStarted(runtime(payments, { store, auditSink: audit, approvalPolicy: paymentsPolicy }));
    await again.ask("payments", {}, { type: "balance" });
    await turns(20);
    const planted = audit.events.filter((e) => e.event === "approval.voted" || e.event === "approval.decided");
    expect(planted).toEqual([]);
    expect((await again.approvals.get(request.approvalId)).status).toBe("pending");
    attempt("plant receipts in the stored record", planted.length === 0 && payments.state.paid.length === 0);
  });

  it("an approval used once cannot be used again, and cannot release another message", async () => {
    const { rt, payments, request } = await heldPayment();
    await rt.approvals.approve(request.approvalId, "ana");
    await rt.approvals.approve(request.approvalId, "ben");
    await waitUntil(() => payments.state.paid.length === 1, "the payment");
    void rt.ask("payments", { amountCents: 900_000, to: "MALLORY" }, { type: "pay", timeoutMs: 30_000 }).catch(() => undefined);
    const [second] = (await pendingOf(rt)).filter((v) => v.approvalId !== request.approvalId);
    expect(second).toBeDefined();
    expect((await rejection(rt.approvals.approve(request.approvalId, "cy"))).code).toBe("STALE_APPROVAL");
    await rt.ask("payments", {}, { type: "balance" });
    attempt("replay a used approval id", payments.state.paid.length === 1 && (await rt.approvals.get(second!.approvalId)).status === "pending");
  });

  it.each([
    ["upper case", (id: string) => id.toUpperCase()],
    ["a trailing space", (id: string) => `${id} `],
    ["a zero-width space", (id: string) => `${id.slice(0, 8)}\u200B${id.slice(8)}`],
    ["a Cyrillic lookalike of a hex letter", (id: string) => id.replace(/[a-f]/, (c) => (c === "a" ? "\u0430" : c === "c" ? "\u0441" : c === "e" ? "\u0435" : "\u0430"))],
    ["one digit changed", (id: string) => id.slice(0, -1) + (id.endsWith("0") ? "1" : "0")],
  ])("a lookalike id (%s) finds nothing", async (name, lookalike) => {
    const { rt, payments, request } = await heldPayment();
    const fake = lookalike(request.approvalId);
    expect(fake).not.toBe(request.approvalId);
    const codes = [await rejection(rt.approvals.approve(fake, "ana")), await rejection(rt.approvals.approve(fake, "ben"))].map((e) => e.code);
    expect(codes).toEqual(["APPROVAL_NOT_FOUND", "APPROVAL_NOT_FOUND"]);
    await rt.ask("payments", {}, { type: "balance" });
    attempt(`approve with a lookalike id (${name})`, payments.state.paid.length === 0 && (await rt.approvals.get(request.approvalId)).votes.length === 0);
  });

  it("an approver of another stage cannot vote in this one, before or after the stage changes", async () => {
    const policy: typeof paymentsPolicy = ({ message }) => (message.type === "pay" ? { decision: "require_approval", reason: "two stages", rule: TWO_STAGES } : { decision: "allow" });
    const { rt, payments, request } = await heldPayment({ policy });
    expect((await rejection(rt.approvals.approve(request.approvalId, "dan"))).code).toBe("APPROVER_NOT_ALLOWED");
    await rt.approvals.approve(request.approvalId, "ana");
    expect((await rejection(rt.approvals.approve(request.approvalId, "ben"))).code).toBe("APPROVER_NOT_ALLOWED");
    await rt.ask("payments", {}, { type: "balance" });
    attempt("vote as an approver of another stage", payments.state.paid.length === 0 && (await rt.approvals.get(request.approvalId)).stage === 1);
  });

  it("a hand-built _agency.approval vote put into the mailbox is dropped as forged control", async () => {
    const { rt, payments, request } = await heldPayment();
    const forged: string[] = [];
    rt.on("control.forged", (_agent, message) => forged.push(message.type));
    // Past the public types, as a JavaScript caller can: the mailbox's private lane delivery (put refuses reserved types).
    const raw = payments.mailbox as unknown as { deliver(m: Message, lane: unknown): void; priority: unknown };
    for (const approver of ["ana", "ben"]) {
      raw.deliver(createMessage({ type: "_agency.approval", sender: "_runtime", recipient: "payments", payload: { approvalId: request.approvalId, approver, vote: "approve" }, priority: 1 }), raw.priority);
    }
    await rt.ask("payments", {}, { type: "balance" });
    await turns(20);
    expect(forged).toEqual(["_agency.approval", "_agency.approval"]);
    attempt("forge a vote as a control message", payments.state.paid.length === 0 && (await rt.approvals.get(request.approvalId)).votes.length === 0);
  });

  it("a copy of the held message (same id, same payload) put into the mailbox after the approval is not released: it goes through the gate as a new action", async () => {
    const { rt, payments, request } = await heldPayment();
    await rt.approvals.approve(request.approvalId, "ana");
    await rt.approvals.approve(request.approvalId, "ben");
    await waitUntil(() => payments.state.paid.length === 1, "the payment");
    await payments.mailbox.put(createMessage({ id: request.message.id, type: "pay", sender: "_runtime", recipient: "payments", payload: { amountCents: 250_000, to: "ACME" } }));
    const pending = await pendingOf(rt);
    expect(pending.map((v) => v.digest)).toEqual([request.digest]);
    attempt("replay the approved message itself", payments.state.paid.length === 1);
  });
});

