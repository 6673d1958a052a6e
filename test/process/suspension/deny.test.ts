/**
 * runtime.deny: a pause settled without approving it. The same checks and
 * order as resume (SPEC §5, §11.7–9), an `agent.deny` receipt before the
 * effect, the marker cleared in one write, RUNNING, then `onDeny` (never
 * `onResume`), so the agent drops its pending action.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  ResumeRefusedError,
  Runtime,
  silentLogger,
  SUSPENSION_KEY,
  type AuditEvent,
  type AuditSink,
  type Message,
  type ResumeDecision,
  type SuspensionMarker,
} from "../../../src/index.js";
import { SqliteStateStore } from "../../../src/sqlite/sqlite-state-store.js";
import { Pausable, pausableRig, rig, startedRig, suspendedRig, expectRefusedWithCause, suspendedRigWithThrowingAuthorizer, teardown, TimelineAudit, watchNothingSent } from "./helpers.js";
import { gate, waitUntil } from "../../support/agents.js";
import { rejectsWithCode } from "../../support/outcome.js";
import { whenStarted } from "../../support/runtimes.js";

afterEach(teardown);

const S = ProcessStatus;

describe("runtime.deny: the order of effects", () => {
  it("receipt, then the cleared marker in one write, then RUNNING, then onDeny (not onResume), then the next business message", async () => {
    const timeline: string[] = [];
    const agent = new Pausable("a");
    agent.timeline = timeline;
    const r = rig([agent], {
      audit: new TimelineAudit(timeline),
      onStatus: (c) => timeline.push(`status:${c.to}`),
    });
    r.store.onSet = (_name, state) => timeline.push(SUSPENSION_KEY in state ? "set:marker" : "set:cleared");
    await r.runtime.start();
    await r.runtime.suspend("a", "big payment");
    const id = agent.suspension!.suspensionId;
    await r.runtime.send("a", { seq: 1 });
    timeline.length = 0;
    await r.runtime.deny("a", "bob", { suspensionId: id, reason: "over budget" });
    timeline.push("deny-resolved");
    await waitUntil(() => agent.handled.length === 1, "the queued message handled");
    expect(timeline).toEqual(["audit:agent.deny", "set:cleared", "status:RUNNING", "onDeny:bob", "deny-resolved", "handle:1"]);
    expect(agent.resumes).toEqual([]);
    expect(agent.denies).toEqual([["bob", id, "over budget"]]);
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspension).toBeUndefined();
    expect(await r.store.marker("a")).toBeUndefined();
    expect(r.store.setsOf("a").filter((s) => !(SUSPENSION_KEY in s.state))).toHaveLength(1);
  });

  it("records agent.deny { decider, suspensionId, reason, expired: false }; reason defaults to \"\"", async () => {
    const { agent, runtime, audit } = await suspendedRig();
    const id = agent.suspension!.suspensionId;
    await runtime.deny("a", "bob");
    const row = audit.events.find((e) => e.event === "agent.deny");
    expect(row).toMatchObject({ agent: "a", details: { decider: "bob", suspensionId: id, reason: "", expired: false } });
    expect(Object.keys(row!.details).sort()).toEqual(["decider", "expired", "reason", "suspensionId"]);
    expect(audit.events.some((e) => e.event === "agent.resume")).toBe(false);
    expect(agent.denies).toEqual([["bob", id, ""]]);
  });

  it("onDeny receives the marker of the pause it denied (reason, since, suspensionId)", async () => {
    const markers: SuspensionMarker[] = [];
    class Keeper extends AgentProcess {
      override async onDeny(_decider: string, marker: SuspensionMarker): Promise<void> {
        markers.push(marker);
      }
    }
    const agent = new Keeper("k");
    const r = await startedRig([agent]);
    await r.runtime.suspend("k", "wire transfer");
    const before = agent.suspension!;
    await r.runtime.deny("k", "bob");
    expect(markers).toEqual([expect.objectContaining({ reason: "wire transfer", since: before.since, suspensionId: before.suspensionId, approver: null })]);
  });

  it("the agent drops its pending action in onDeny: the checkpoint-and-return pattern with a no", async () => {
    class Payer extends AgentProcess<{ pending: number | null; paid: number[] }> {
      override state = { pending: null as number | null, paid: [] as number[] };
      override async handle(message: Message): Promise<void> {
        this.state.pending = message.payload.amount as number;
        this.suspend("large payment");
        await this.checkpoint();
      }
      override async onResume(): Promise<void> {
        if (this.state.pending !== null) this.state.paid.push(this.state.pending);
        this.state.pending = null;
        await this.checkpoint();
      }
      override async onDeny(): Promise<void> {
        this.state.pending = null;
        await this.checkpoint();
      }
    }
    const agent = new Payer("payer");
    const r = await startedRig([agent]);
    await r.runtime.send("payer", { amount: 5000 });
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await r.runtime.deny("payer", "bob", { suspensionId: agent.suspension!.suspensionId });
    expect(agent.state).toEqual({ pending: null, paid: [] });
    expect(await r.store.inner.get("payer")).toEqual({ pending: null, paid: [] });
  });
});

describe("runtime.deny: the checks, in resume's order", () => {
  it.each([
    ["an empty string", ""],
    ["whitespace", "  "],
    ["undefined", undefined],
    ["a number", 7],
    ["a bidi override", "\u202Eecila"],
  ])("INVALID_APPROVER for a decider that is %s, before anything is sent", async (_what, decider) => {
    const r = await suspendedRig();
    const { agent, runtime } = r;
    const nothingSent = watchNothingSent(r);
    const error = await rejectsWithCode(runtime.deny("a", decider as string), "INVALID_APPROVER");
    expect(error.name).toBe("InvalidApproverError");
    expect(error.message).toMatch(/^deny\('a'\) needs a decider/);
    await nothingSent(5);
    expect(agent.denies).toEqual([]);
  });

  it("INVALID_APPROVER comes before AGENT_NOT_FOUND; AGENT_NOT_FOUND for an unknown name", async () => {
    const { runtime } = await suspendedRig();
    await rejectsWithCode(runtime.deny("nobody", ""), "INVALID_APPROVER");
    const error = await rejectsWithCode(runtime.deny("nobody", "bob"), "AGENT_NOT_FOUND");
    expect(error.name).toBe("AgentNotFoundError");
  });

  it("INVALID_ARGUMENT for a reason that is not a string, a blank suspensionId, or options that are not an object", async () => {
    const { agent, runtime } = await suspendedRig();
    const reason = await rejectsWithCode(runtime.deny("a", "bob", { reason: 42 as unknown as string }), "INVALID_ARGUMENT");
    expect(reason.message).toContain("deny('a') needs a string reason");
    const long = await rejectsWithCode(runtime.deny("a", "bob", { reason: "x".repeat(1025) }), "INVALID_ARGUMENT");
    expect(long.message).toContain("at most 1024 characters");
    const decider = await rejectsWithCode(runtime.deny("a", "b".repeat(1025)), "INVALID_APPROVER");
    expect(decider.message).toContain("deny('a') needs a decider");
    await rejectsWithCode(runtime.deny("a", "bob", { suspensionId: "" }), "INVALID_ARGUMENT");
    await rejectsWithCode(runtime.deny("a", "bob", null as never), "INVALID_ARGUMENT");
    const timeout = await rejectsWithCode(runtime.deny("a", "bob", { timeoutMs: -1 }), "INVALID_ARGUMENT");
    expect(timeout.message).toContain("deny('a')");
    expect(agent.status).toBe(S.SUSPENDED);
  });

  it("STALE_APPROVAL for another pause's id, and for any id once the pause is settled; nothing changes", async () => {
    const { agent, runtime, audit } = await suspendedRig();
    const id = agent.suspension!.suspensionId;
    const stale = await rejectsWithCode(runtime.deny("a", "bob", { suspensionId: "not-the-id" }), "STALE_APPROVAL");
    expect(stale.name).toBe("StaleApprovalError");
    expect(stale.message).toMatch(/^deny\('a'\) denies suspension not-the-id, but the agent is suspended under /);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(audit.events.some((e) => e.event === "agent.deny")).toBe(false);
    await runtime.deny("a", "bob", { suspensionId: id });
    // settle once: neither a second deny nor a resume of that pause
    await rejectsWithCode(runtime.deny("a", "bob", { suspensionId: id }), "STALE_APPROVAL");
    await rejectsWithCode(runtime.resume("a", "alice", { suspensionId: id }), "STALE_APPROVAL");
    expect(audit.events.filter((e) => e.event === "agent.deny")).toHaveLength(1);
    expect(agent.resumes).toEqual([]);
  });

  it("a denial of a pause that was approved already is STALE_APPROVAL", async () => {
    const { agent, runtime } = await suspendedRig();
    const id = agent.suspension!.suspensionId;
    await runtime.resume("a", "alice", { suspensionId: id });
    await rejectsWithCode(runtime.deny("a", "bob", { suspensionId: id }), "STALE_APPROVAL");
    expect(agent.denies).toEqual([]);
  });

  it("denying a running agent without a suspensionId is a no-op (the decider still checked)", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.deny("a", "bob");
    await rejectsWithCode(r.runtime.deny("a", " "), "INVALID_APPROVER");
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.denies).toEqual([]);
    expect(r.audit.events.some((e) => e.event === "agent.deny")).toBe(false);
  });

  it("a deny sent while the agent ran does not deny a pause the handler then in progress asks for (it could not have seen it)", async () => {
    const { agent, ...r } = await pausableRig();
    const blocker = gate();
    agent.blocker = blocker;
    await r.runtime.send("a", { op: "block", seq: 1 });
    await waitUntil(() => agent.active === 1, "handling the blocked message");
    const denying = r.runtime.deny("a", "bob");
    agent.suspend("asked after the deny was sent"); // as the handler in progress would
    blocker.open();
    await denying;
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.denies).toEqual([]);
    expect(r.audit.events.some((e) => e.event === "agent.deny")).toBe(false);
  });

  it("authorizeResume is asked, told it is a denial; a refusal is RESUME_REFUSED and the agent stays SUSPENDED", async () => {
    const asked: Array<[string, string, string, ResumeDecision | undefined]> = [];
    const { agent, runtime, audit, store } = await suspendedRig({
      authorizeResume: (name, who, marker, decision) => {
        asked.push([name, who, marker.suspensionId, decision]);
        return decision?.decision !== "deny";
      },
    });
    const id = agent.suspension!.suspensionId;
    const setsBefore = store.sets.length;
    const error = await rejectsWithCode(runtime.deny("a", "mallory", { suspensionId: id }), "RESUME_REFUSED");
    expect(error).toBeInstanceOf(ResumeRefusedError);
    expect(error.message).toContain("refused to let 'mallory' deny 'a'");
    expect(asked).toEqual([["a", "mallory", id, { decision: "deny" }]]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.denies).toEqual([]);
    expect(store.sets.length).toBe(setsBefore);
    expect(audit.events.some((e) => e.event === "agent.deny")).toBe(false);
    // the same hook lets the approval through, told it is one
    await runtime.resume("a", "alice", { suspensionId: id });
    expect(asked[1]).toEqual(["a", "alice", id, { decision: "approve" }]);
    expect(agent.status).toBe(S.RUNNING);
  });

  it("a hook that throws refuses too, keeping the error as cause", async () => {
    const { runtime, agent, boom } = await suspendedRigWithThrowingAuthorizer();
    await expectRefusedWithCause(agent, runtime.deny("a", "bob"), boom);
  });

  it("AUDIT_UNAVAILABLE when the agent.deny receipt cannot be recorded: nothing changes, the pause stays", async () => {
    class RefusingSink implements AuditSink {
      readonly recorded: AuditEvent[] = [];
      emit(event: AuditEvent): Promise<void> {
        if (event.event === "agent.deny") return Promise.reject(new Error("disk full"));
        this.recorded.push(event);
        return Promise.resolve();
      }
    }
    const store = new InMemoryStateStore();
    const agent = new Pausable("payer");
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: silentLogger, store, auditSink: new RefusingSink() }));
    try {
      await runtime.suspend("payer", "approve");
      const error = await rejectsWithCode(runtime.deny("payer", "bob"), "AUDIT_UNAVAILABLE");
      expect(error.name).toBe("AuditUnavailableError");
      expect(error.message).toContain("deny receipt");
      expect(agent.status).toBe(S.SUSPENDED);
      expect(agent.denies).toEqual([]);
      expect((await store.get("payer"))?.[SUSPENSION_KEY]).toBeDefined();
    } finally {
      await runtime.stop();
    }
  });
});

describe("runtime.deny: traced like a resume", () => {
  it("a civitas.agent.deny span with the agent, suspension id and decider", async () => {
    const { agent, runtime, tracing } = await suspendedRig({ tracing: true });
    const id = agent.suspension!.suspensionId;
    await runtime.deny("a", "bob");
    const [span] = tracing!.named("civitas.agent.deny");
    expect(span?.attributes).toMatchObject({ "civitas.agent.name": "a", "civitas.suspend.id": id, "civitas.deny.decider": "bob", "civitas.deny.expired": false });
    expect(tracing!.named("civitas.agent.resume")).toEqual([]);
  });
});

describe("runtime.deny across a restart (SQLite)", () => {
  it("a pause stored by one runtime is denied by the next on the same file; the marker is gone from the file", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-deny-"));
    const file = path.join(dir, "state.db");
    try {
      const first = new SqliteStateStore(file);
      const a1 = new Pausable("a");
      const r1 = await whenStarted(new Runtime({ root: [a1], store: first, logger: silentLogger }));
      await r1.suspend("a", "big payment");
      const id = a1.suspension!.suspensionId;
      await r1.send("a", { seq: 1 });
      await r1.stop();
      await first.close();

      const second = new SqliteStateStore(file);
      const audit = new MemoryAuditSink();
      const a2 = new Pausable("a");
      const r2 = await whenStarted(new Runtime({ root: [a2], store: second, logger: silentLogger, auditSink: audit }));
      try {
        expect(a2.status).toBe(S.SUSPENDED);
        expect(a2.suspension?.suspensionId).toBe(id);
        await r2.deny("a", "bob", { suspensionId: id, reason: "not today" });
        expect(a2.status).toBe(S.RUNNING);
        expect(a2.denies).toEqual([["bob", id, "not today"]]);
        expect(a2.resumes).toEqual([]);
        expect((await second.get("a"))?.[SUSPENSION_KEY]).toBeUndefined();
        expect(audit.events.find((e) => e.event === "agent.deny")?.details).toEqual({ decider: "bob", suspensionId: id, reason: "not today", expired: false });
      } finally {
        await r2.stop();
        await second.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
