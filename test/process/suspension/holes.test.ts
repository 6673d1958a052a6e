import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  AgentSuspendedError,
  ProcessStatus,
  SUSPENSION_KEY,
  type JsonObject,
  type Message,
} from "../../../src/index.js";
import { Pausable, pausableRig, rig, startedRig, teardown } from "./helpers.js";
import { rejectsWithCode, track } from "../../support/outcome.js";
import { heldHook, turns, waitUntil } from "../../support/agents.js";
import { whenStarted } from "../../support/runtimes.js";

afterEach(teardown);

const S = ProcessStatus;

describe("TTL of messages buffered while SUSPENDED", () => {
  it("expire at dequeue after resume: counted, reported via message.expired, never handled; the rest run in order", async () => {
    const agent = new Pausable("a");
    const r = rig([agent]);
    const expired: Message[] = [];
    r.runtime.on("message.expired", (m) => expired.push(m));
    await r.runtime.start();
    await r.runtime.suspend("a", "long approval");
    await r.runtime.send("a", { seq: 1 }, { ttlMs: 1_000 });
    await r.runtime.send("a", { seq: 2 });
    await r.runtime.send("a", { seq: 3 }, { ttlMs: 1_000 });
    await r.runtime.send("a", { seq: 4 }, { ttlMs: 10 * 86_400_000 });
    await r.clock.advance(3_600_000);
    // nothing is discarded while it waits: expiry happens at dequeue
    expect(agent.mailbox.size).toBe(4);
    expect(expired).toEqual([]);
    await r.runtime.resume("a", "alice");
    await waitUntil(() => agent.mailbox.size === 0 && agent.handled.length === 2, "drained");
    await turns(10);
    expect(agent.handled).toEqual([2, 4]);
    expect(agent.mailbox.expiredCount).toBe(2);
    expect(expired.map((m) => m.payload.seq)).toEqual([1, 3]);
    expect(r.logs.filter((l) => l.level === "warn" && l.message.includes("expired"))).toHaveLength(2);
  });
});

describe("capability and broadcast routing into a suspended agent (documented tradeoff)", () => {
  it("sendCapable and broadcast still pick the suspended agent: the message is buffered and handled after resume", async () => {
    const payer = new Pausable("pay-1", { capabilities: ["payments"] });
    const other = new Pausable("pay-2");
    const router = new Pausable("router");
    const r = await startedRig([payer, other, router]);
    await r.runtime.suspend("pay-1", "audit");
    await router.sendCapable("payments", { seq: 1 });
    const count = await router.broadcast("pay-*", { seq: 2 });
    expect(count).toBe(2);
    await waitUntil(() => other.handled.length === 1, "the running one handles the broadcast");
    await turns(10);
    expect(payer.mailbox.size).toBe(2);
    expect(payer.handled).toEqual([]);
    await r.runtime.resume("pay-1", "alice");
    await waitUntil(() => payer.handled.length === 2, "buffered handled");
    expect(payer.handled).toEqual([1, 2]);
  });
});

describe("ask into a suspended agent", () => {
  it("waits and times out with ASK_TIMEOUT (the request stays queued; its late reply is dropped and counted)", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a");
    const asking = track(r.runtime.ask("a", { op: "echo", seq: 1 }, { timeoutMs: 5_000 }));
    await r.clock.advance(4_999);
    expect(asking.state).toBe("pending");
    await r.clock.advance(1);
    await rejectsWithCode(asking.promise, "ASK_TIMEOUT");
    expect(agent.entered).toBe(0);
    await r.runtime.resume("a", "alice");
    await waitUntil(() => agent.handled.length === 1, "request handled after resume");
    await waitUntil(() => r.runtime.lateReplies === 1, "late reply dropped");
  });

  it("an ask that is still waiting when the agent is resumed gets its answer", async () => {
    const r = await pausableRig();
    await r.runtime.suspend("a");
    const asking = r.runtime.ask("a", { op: "echo", seq: 7 }, { timeoutMs: 60_000 });
    await turns(5);
    await r.runtime.resume("a", "alice");
    expect((await asking).payload).toEqual({ seq: 7 });
  });

  it("failIfSuspended rejects at once with AGENT_SUSPENDED, from runtime.ask and from agent.ask; nothing is enqueued", async () => {
    const target = new Pausable("a");
    const caller = new Pausable("caller");
    const r = await startedRig([target, caller]);
    await r.runtime.suspend("a");
    const e1 = await rejectsWithCode(r.runtime.ask("a", { op: "echo" }, { failIfSuspended: true, timeoutMs: 60_000 }), "AGENT_SUSPENDED");
    expect(e1).toBeInstanceOf(AgentSuspendedError);
    const e2 = await rejectsWithCode(caller.ask("a", { op: "echo" }, { failIfSuspended: true }), "AGENT_SUSPENDED");
    expect(e2).toBeInstanceOf(AgentSuspendedError);
    expect(target.mailbox.size).toBe(0);
    await r.runtime.resume("a", "alice");
    // once RUNNING the same options go through
    expect((await r.runtime.ask("a", { op: "echo", seq: 3 }, { failIfSuspended: true })).payload).toEqual({ seq: 3 });
    expect((await caller.ask("a", { op: "echo", seq: 4 }, { failIfSuspended: true })).payload).toEqual({ seq: 4 });
  });
});

describe("listSuspended", () => {
  it("lists name, reason, since and suspensionId of every suspended agent, and only those", async () => {
    const agents = [new Pausable("a"), new Pausable("b"), new Pausable("c")];
    const r = await startedRig(agents);
    expect(r.runtime.listSuspended()).toEqual([]);
    await r.runtime.suspend("a", "why a");
    await r.clock.advance(1_000);
    await r.runtime.suspend("c", "why c");
    const [a, , c] = agents;
    expect(r.runtime.listSuspended()).toEqual([
      { name: "a", reason: "why a", since: a!.suspension!.since, suspensionId: a!.suspension!.suspensionId },
      { name: "c", reason: "why c", since: c!.suspension!.since, suspensionId: c!.suspension!.suspensionId },
    ]);
    expect(a!.suspension!.since).not.toBe(c!.suspension!.since);
    await r.runtime.resume("a", "alice");
    expect(r.runtime.listSuspended().map((s) => s.name)).toEqual(["c"]);
  });
});

describe("self-suspend outside handle", () => {
  it("called from a timer on an idle agent, it still suspends it (and runs onSuspend once)", async () => {
    const { agent, ...r } = await pausableRig();
    await turns(5);
    r.clock.setTimeout(() => agent.suspend("from a timer"), 500);
    await r.clock.advance(500);
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await waitUntil(() => agent.suspends.length === 1, "onSuspend");
    expect(agent.suspension?.reason).toBe("from a timer");
    expect(await r.store.marker("a")).toEqual(agent.suspension);
    await r.runtime.send("a", { seq: 1 });
    await turns(10);
    expect(agent.handled).toEqual([]);
  });

  it("called from onStart, the agent suspends before taking its first business message", async () => {
    class Early extends Pausable {
      override async onStart(): Promise<void> {
        await super.onStart();
        this.suspend("from onStart");
      }
    }
    const agent = new Early("a");
    const r = rig([agent]);
    await r.runtime.send("a", { seq: 1 }).catch(() => undefined);
    await r.runtime.start();
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await turns(10);
    expect(agent.handled).toEqual([]);
  });

  it("suspend(reason) with a non-string reason throws INVALID_ARGUMENT and changes nothing", async () => {
    const { agent, ...r } = await pausableRig();
    let thrown: unknown;
    try {
      agent.suspend(42 as unknown as string);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { code?: string } | undefined)?.code).toBe("INVALID_ARGUMENT");
    await rejectsWithCode(r.runtime.suspend("a", 42 as unknown as string), "INVALID_ARGUMENT");
    await turns(10);
    expect(agent.status).toBe(S.RUNNING);
  });
});

/** The sanctioned approve-this-action pattern, verbatim: store, checkpoint, suspend, return; execute in onResume. */
class Payer extends AgentProcess<{ pending?: JsonObject; paid?: number }> {
  readonly executed: Array<{ amount: number; approver: string }> = [];
  override async handle(message: Message): Promise<void> {
    if (message.payload.op === "pay") {
      this.state.pending = { amount: message.payload.amount as number };
      await this.checkpoint();
      this.suspend(`approve payment of ${String(message.payload.amount)}`);
      return;
    }
  }
  override async onResume(approver: string): Promise<void> {
    const pending = this.state.pending;
    if (pending === undefined) return;
    this.executed.push({ amount: pending.amount as number, approver });
    this.state.paid = (this.state.paid ?? 0) + (pending.amount as number);
    delete this.state.pending;
    await this.checkpoint();
  }
}

describe("checkpoint-and-return", () => {
  it("the pending action is executed exactly once, by onResume, with the approver", async () => {
    const payer = new Payer("payer");
    const r = await startedRig([payer]);
    await r.runtime.send("payer", { op: "pay", amount: 100 });
    await waitUntil(() => payer.status === S.SUSPENDED, "SUSPENDED");
    await waitUntil(() => r.store.sets.some((s) => s.state[SUSPENSION_KEY] !== undefined), "marker stored");
    expect(payer.executed).toEqual([]);
    expect(await r.store.get("payer")).toEqual({ pending: { amount: 100 }, [SUSPENSION_KEY]: payer.suspension });
    const id = payer.suspension!.suspensionId;
    await r.runtime.resume("payer", "alice", { suspensionId: id });
    expect(payer.executed).toEqual([{ amount: 100, approver: "alice" }]);
    await rejectsWithCode(r.runtime.resume("payer", "alice", { suspensionId: id }), "STALE_APPROVAL");
    await r.runtime.resume("payer", "bob");
    await turns(10);
    expect(payer.executed).toHaveLength(1);
    expect(await r.store.get("payer")).toEqual({ paid: 100 });
  });

  it("survives a restart: the new runtime comes back SUSPENDED with the pending action, and executes it once on resume", async () => {
    const first = new Payer("payer");
    const r1 = await startedRig([first]);
    const { store } = r1;
    await r1.runtime.send("payer", { op: "pay", amount: 5 });
    await waitUntil(() => first.status === S.SUSPENDED, "SUSPENDED");
    await r1.runtime.stop();

    const second = new Payer("payer");
    const r2 = await startedRig([second], { store });
    expect(second.status).toBe(S.SUSPENDED);
    expect(second.state.pending).toEqual({ amount: 5 });
    expect(second.executed).toEqual([]);
    await r2.runtime.resume("payer", "carol");
    expect(second.executed).toEqual([{ amount: 5, approver: "carol" }]);
    expect(first.executed).toEqual([]);
    expect(await store.get("payer")).toEqual({ paid: 5 });
  });
});

describe("waiting on suspend and resume is bounded", () => {
  it("runtime.suspend with timeoutMs rejects with ASK_TIMEOUT while the agent is busy, and the pause still lands afterwards", async () => {
    const { Runtime, silentLogger, ProcessStatus } = await import("../../../src/index.js");
    const handler = heldHook("handle");
    const busy = new handler.Agent("busy");
    const runtime = await whenStarted(new Runtime({ root: [busy], logger: silentLogger }));
    try {
      await runtime.send("busy", {});
      await expect(runtime.suspend("busy", "later", { timeoutMs: 30 })).rejects.toMatchObject({ code: "ASK_TIMEOUT" });
      const controller = new AbortController();
      const aborted = runtime.suspend("busy", "later", { signal: controller.signal });
      controller.abort(new Error("gave up"));
      await expect(aborted).rejects.toThrow("gave up");
      await expect(runtime.suspend("busy", "x", { timeoutMs: -1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      handler.release.open();
      const deadline = Date.now() + 2000;
      while (busy.status !== ProcessStatus.SUSPENDED && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      expect(busy.status).toBe(ProcessStatus.SUSPENDED);
      expect(busy.suspension?.reason).toBe("later");
    } finally {
      await runtime.stop();
    }
  });
});

describe("onResume learns which pause it settles", () => {
  it("receives the approver and the marker of the pause being lifted", async () => {
    const { AgentProcess, Runtime, silentLogger } = await import("../../../src/index.js");
    const seen: Array<{ approver: string; reason: string; suspensionId: string }> = [];
    class Recorder extends AgentProcess {
      override async onResume(approver: string, marker: { reason: string; suspensionId: string }): Promise<void> {
        seen.push({ approver, reason: marker.reason, suspensionId: marker.suspensionId });
      }
    }
    const agent = new Recorder("recorder");
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: silentLogger }));
    try {
      await runtime.suspend("recorder", "check the invoice");
      const suspensionId = agent.suspension?.suspensionId;
      expect(suspensionId).toBeDefined();
      await runtime.resume("recorder", "alice");
      expect(seen).toEqual([{ approver: "alice", reason: "check the invoice", suspensionId }]);
    } finally {
      await runtime.stop();
    }
  });
});

describe("a resume overtaken by a sibling restart", () => {
  it("waits for the restarted incarnation, which comes back SUSPENDED, and then takes effect", async () => {
    const { AgentProcess, Runtime, silentLogger, Supervisor, ProcessStatus, MemoryAuditSink } = await import("../../../src/index.js");
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    let decide!: (allowed: boolean) => void;
    let asked = 0;
    const audit = new MemoryAuditSink();
    const subject = new AgentProcess("subject");
    const runtime = new Runtime({
      root: new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [subject, new Crasher("sibling")] }),
      logger: silentLogger,
      auditSink: audit,
      authorizeResume: () => {
        asked++;
        return asked === 1 ? new Promise<boolean>((resolve) => (decide = resolve)) : true;
      },
    });
    await runtime.start();
    try {
      await runtime.suspend("subject", "review");
      const suspensionId = subject.suspension?.suspensionId;
      const resuming = runtime.resume("subject", "alice");
      while (asked === 0) await new Promise((r) => setTimeout(r, 1));
      await runtime.send("sibling", {}); // ONE_FOR_ALL stops the subject while its approval is being decided
      while (subject.status !== ProcessStatus.STOPPING) await new Promise((r) => setTimeout(r, 1));
      decide(true);
      await resuming;
      expect(subject.status).toBe(ProcessStatus.RUNNING);
      expect(subject.incarnation).toBe(2);
      expect(asked).toBe(2); // authorized again by the incarnation that applied it
      expect(audit.ofType("agent.resume", "subject").map((e) => e.details.suspensionId)).toEqual([suspensionId]);
    } finally {
      await runtime.stop();
    }
  });
});
