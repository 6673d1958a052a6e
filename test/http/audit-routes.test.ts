/**
 * The audit routes against a real signed JSONL log: the trail of one pause
 * with its offline verification (the same verdict `verifySuspension` gives),
 * the history of decisions, a tampered log reported as failed, and the
 * refusals.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { JsonlAuditSink, verifySuspension } from "../../src/entries/audit.js";
import { ProcessStatus, Supervisor, type Runtime } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { scratch } from "../support/scratch.js";
import { headerIdentity, inboxes, LIMIT_CENTS, Payer, signIn } from "./support.js";

const KEY = "inbox-test-key";
const { tempDir, track } = scratch("civitas-http-audit-");
const runtime = runtimes();
const serve = inboxes();

async function pausedWithLog(count: number): Promise<{ rt: Runtime; log: string; payers: Payer[] }> {
  const log = path.join(tempDir(), "audit.jsonl");
  const sink = track(new JsonlAuditSink(log, { key: KEY }));
  const payers = Array.from({ length: count }, (_, i) => new Payer(`payer-${i}`));
  const rt = runtime(new Supervisor("root", { children: payers }), { auditSink: sink });
  await rt.start();
  for (const [i, payer] of payers.entries()) {
    await rt.send(payer.name, { invoice: `INV-${i}`, cents: LIMIT_CENTS * 2 });
    await until(() => payer.status === ProcessStatus.SUSPENDED);
  }
  return { rt, log, payers };
}

describe("GET /api/v1/agents/{name}/suspensions/{id}/audit", () => {
  it("shows the receipts of one pause and its offline verification: pending, then verified once approved", async () => {
    const { rt, log } = await pausedWithLog(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: log, key: KEY } });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    const trailPath = `/api/v1/agents/payer-0/suspensions/${pause?.suspensionId ?? ""}/audit`;
    const before = await alice.get(trailPath);
    expect(before.status).toBe(200);
    expect(before.json.suspension).toMatchObject({ suspensionId: pause?.suspensionId, status: "pending" });
    expect((before.json.rows as { event: string }[]).map((r) => r.event)).toEqual(["agent.suspend"]);
    await alice.post("/api/v1/agents/payer-0/resume", { suspensionId: pause?.suspensionId });
    const after = await alice.get(trailPath);
    expect(after.json.suspension).toMatchObject({ suspensionId: pause?.suspensionId, status: "verified", decision: "approved", decidedBy: "alice", approver: "alice" });
    expect((after.json.rows as { event: string; details: { approver?: string } }[]).map((r) => [r.event, r.details.approver])).toEqual([
      ["agent.suspend", undefined],
      ["agent.resume", "alice"],
    ]);
    const offline = await verifySuspension(log, "payer-0", { key: KEY });
    expect(after.json.log).toMatchObject({ status: offline.status, failures: offline.failures, chain: { ok: true, tornTail: false } });
  });

  it("reports a log edited after the fact as failed, with the row where the chain breaks", async () => {
    const { rt, log } = await pausedWithLog(1);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: () => log, key: KEY } });
    const alice = await signIn(server.url, "alice");
    const [pause] = rt.listSuspended();
    await alice.post("/api/v1/agents/payer-0/deny", { suspensionId: pause?.suspensionId, reason: "no" });
    await rt.stop();
    const text = readFileSync(log, "utf8");
    expect(text).toContain('"reason":"no"');
    writeFileSync(log, text.replace('"reason":"no"', '"reason":"ok"'));
    const trail = await alice.get(`/api/v1/agents/payer-0/suspensions/${pause?.suspensionId ?? ""}/audit`);
    expect(trail.status).toBe(200);
    expect(trail.json.log).toMatchObject({ status: "failed", chain: { ok: false } });
    expect((trail.json.log as { chain: { brokenAt: number } }).chain.brokenAt).toBeGreaterThan(0);
    const history = await alice.get("/api/v1/history");
    expect(history.json.chain).toMatchObject({ ok: false });
  });

  it("answers a pause the log does not hold, and a server without an audit log, with 404 AUDIT_RECORD_NOT_FOUND", async () => {
    const { rt, log } = await pausedWithLog(1);
    const withLog = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: log, key: KEY } });
    const alice = await signIn(withLog.url, "alice");
    const unknown = await alice.get("/api/v1/agents/payer-0/suspensions/no-such-id/audit");
    expect([unknown.status, unknown.json.error?.code]).toEqual([404, "AUDIT_RECORD_NOT_FOUND"]);
    const without = await serve({ runtime: rt, authenticate: headerIdentity });
    const bob = await signIn(without.url, "bob");
    const [pause] = rt.listSuspended();
    for (const route of [`/api/v1/agents/payer-0/suspensions/${pause?.suspensionId ?? ""}/audit`, "/api/v1/history"]) {
      const answer = await bob.get(route);
      expect([route, answer.status, answer.json.error?.code]).toEqual([route, 404, "AUDIT_RECORD_NOT_FOUND"]);
    }
  });

  it("answers a log source that fails with an unknown error as a bare 500 INTERNAL, logging the cause", async () => {
    const { rt } = await pausedWithLog(1);
    const logged: unknown[] = [];
    const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (_m: string, fields?: unknown) => logged.push(fields) };
    const server = await serve({ runtime: rt, authenticate: headerIdentity, logger, audit: { source: () => Promise.reject(new Error("connect to db://admin:hunter2@db failed")), key: KEY } });
    const alice = await signIn(server.url, "alice");
    const answer = await alice.get("/api/v1/history");
    expect(answer.status).toBe(500);
    expect(answer.json).toEqual({ error: { code: "INTERNAL", message: "the server failed to answer this request; its log says why" } });
    expect(answer.text).not.toContain("hunter2");
    expect(logged).toHaveLength(1);
  });
});

describe("GET /api/v1/history", () => {
  it("lists decided pauses newest first with decision, decider, reason and verification status", async () => {
    const { rt, log } = await pausedWithLog(3);
    const server = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: log, key: KEY } });
    const alice = await signIn(server.url, "alice");
    const pauses = new Map(rt.listSuspended().map((p) => [p.name, p.suspensionId]));
    await alice.post("/api/v1/agents/payer-1/resume", { suspensionId: pauses.get("payer-1") });
    await alice.post("/api/v1/agents/payer-0/deny", { suspensionId: pauses.get("payer-0"), reason: "duplicate invoice" });
    const history = await alice.get("/api/v1/history");
    expect(history.status).toBe(200);
    expect(history.json.chain).toMatchObject({ ok: true });
    const items = history.json.items as { kind: string; agent: string; decision: string; decidedBy: string; status: string; suspensionId: string; decisionReason?: string }[];
    expect(items.map((i) => [i.kind, i.agent, i.decision, i.decidedBy, i.status, i.suspensionId, i.decisionReason])).toEqual([
      ["pause", "payer-0", "denied", "alice", "verified", pauses.get("payer-0"), "duplicate invoice"],
      ["pause", "payer-1", "approved", "alice", "verified", pauses.get("payer-1"), undefined],
    ]);
    const one = await alice.get("/api/v1/history?agent=payer-1&limit=5");
    expect((one.json.items as { agent: string }[]).map((i) => i.agent)).toEqual(["payer-1"]);
  });
});
