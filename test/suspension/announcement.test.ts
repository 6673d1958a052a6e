/**
 * A pause is announced (onSuspend, the agent.suspend receipt) exactly when its
 * receipt was not yet recorded, across kills and restarts.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  SUSPENSION_KEY,
  type AuditEvent,
  type JsonObject,
} from "../../src/index.js";
import { runtimes } from "../support/review-kit.js";

const runtime = runtimes();

/** A memory sink that fails `agent.suspend` while `failSuspend` is set. */
class FlakySink extends MemoryAuditSink {
  failSuspend = true;
  override emit(event: AuditEvent): void {
    if (event.event === "agent.suspend" && this.failSuspend) throw new Error("sink down");
    super.emit(event);
  }
}

describe("the announcement flag when the agent.suspend receipt was NOT recorded", () => {
  it("keeps the marker flagged (announced: false), so a restart after a kill records the receipt the pause never got", async () => {
    const store = new InMemoryStateStore();
    const sink = new FlakySink();
    const first = new AgentProcess("a");
    const rt1 = runtime([first], { store, auditSink: sink });
    await rt1.start();
    await rt1.suspend("a", "approve INV-7"); // the sink fails the receipt: the agent still suspends (documented)
    expect(first.status).toBe(ProcessStatus.SUSPENDED);
    expect(sink.ofType("agent.suspend", "a")).toHaveLength(0);
    // The pause has no receipt: the flag that makes "a restart announces it again" must still be there.
    const stored = (await store.get("a"))?.[SUSPENSION_KEY] as JsonObject | undefined;
    expect(stored).toBeDefined();
    expect(stored?.announced).toBe(false);
  });

  it("after a kill, the resume of the restored pause names a suspension the log holds an agent.suspend receipt for", async () => {
    const store = new InMemoryStateStore();
    const sink = new FlakySink();
    const rt1 = runtime([new AgentProcess("a")], { store, auditSink: sink });
    await rt1.start();
    await rt1.suspend("a", "approve INV-7");
    // kill -9: rt1 is simply abandoned; a new process starts on the same store and sink (now healthy)
    sink.failSuspend = false;
    const second = new AgentProcess("a");
    const rt2 = runtime([second], { store, auditSink: sink });
    await rt2.start();
    expect(second.status).toBe(ProcessStatus.SUSPENDED);
    const id = second.suspension?.suspensionId;
    await rt2.resume("a", "alice");
    // "So every pause a resume names has its receipt."
    const suspends = sink.ofType("agent.suspend", "a").map((e) => e.details.suspensionId);
    const resumes = sink.ofType("agent.resume", "a").map((e) => e.details.suspensionId);
    expect(resumes).toEqual([id]);
    expect(suspends).toContain(id);
  });
});

describe("a resume sent while the runtime starts, into a pause a kill left flagged", () => {
  it("lifts the pause, as it does for the same pause stored announced (calls made while start() runs wait in the mailbox)", async () => {
    const audit = new MemoryAuditSink();
    // Process 1 entered the pause and recorded its receipt; the kill came before the write recording that
    // (the window the second write opened): the store holds the marker flagged.
    const marker = { reason: "approve INV-7", since: new Date().toISOString(), approver: null, suspensionId: "01900000-0000-7000-8000-000000000001", announced: false };
    const flagged = new InMemoryStateStore();
    await flagged.set("a", { [SUSPENSION_KEY]: marker });
    // The same record as it would be had the kill come a moment later: announced.
    const announced = new InMemoryStateStore();
    const { announced: _flag, ...plain } = marker;
    await announced.set("a", { [SUSPENSION_KEY]: plain });

    const results: string[] = [];
    for (const store of [announced, flagged]) {
      const agent = new AgentProcess("a");
      const rt = runtime([agent], { store, auditSink: audit });
      // Process 2, the approver's tool: boots and applies the approval it was started for.
      const starting = rt.start();
      const resumed = rt.resume("a", "alice");
      await starting;
      await resumed; // resolves: the caller is told the resume went through ...
      results.push(agent.status); // ... so the agent must be RUNNING
      await rt.stop();
    }
    expect(results).toEqual([ProcessStatus.RUNNING, ProcessStatus.RUNNING]);
  });
});
