/**
 * Issue 21, item 3: a decided pause never comes back. A handler asks for a pause with a deadline,
 * then its checkpoint fails and it crashes; the supervisor's restart (1 s backoff, past the
 * deadline) announces the pause, finds the deadline passed and denies it. No write after that
 * decision may carry the pause's marker, and no later start may bring it back.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, Runtime, silentLogger, SUSPENSION_KEY, type JsonObject, type Message } from "../../../src/index.js";
import { MemoryAuditSink } from "../../../src/audit/memory-audit-sink.js";
import { TestClock } from "../../../src/testing/test-clock.js";
import { waitUntil } from "../../support/agents.js";
import { RecordingStore, startedRig, teardown } from "./helpers.js";
import { whenStarted } from "../../support/runtimes.js";

afterEach(teardown);

class Asker extends AgentProcess<JsonObject> {
  override state: JsonObject = { handled: 0 };
  readonly denied: string[] = [];
  override async handle(message: Message): Promise<void> {
    this.state.handled = (this.state.handled as number) + 1;
    if (message.payload.pause === true) this.suspend("approve me", { expiresInMs: 500 });
    await this.checkpoint();
  }
  override async onDeny(decider: string, marker: { suspensionId: string }): Promise<void> {
    this.denied.push(`${decider}:${marker.suspensionId}`);
  }
}

describe("a decided pause never comes back", () => {
  it("a pause asked for before a failed checkpoint and denied by expiry at the restart is in no later write, and not restored by a later start", async () => {
    const store = new RecordingStore();
    let first = true;
    store.onSet = () => {
      if (first) {
        first = false;
        throw new Error("disk full");
      }
    };
    const agent = new Asker("asker");
    const r = await startedRig([agent], { store });
    await r.runtime.send("asker", { pause: true });
    await waitUntil(() => r.audit.events.some((e) => e.event === "agent.crash"), "the failed checkpoint crashed the agent");
    await r.clock.advance(1_000);
    await waitUntil(() => r.audit.events.some((e) => e.event === "agent.deny"), "the restart denied the expired pause");
    await waitUntil(() => agent.status === ProcessStatus.RUNNING, "RUNNING after the denial");
    const deny = r.audit.events.find((e) => e.event === "agent.deny");
    const suspensionId = deny?.details.suspensionId as string;
    expect(agent.denied).toEqual([`expiry:${suspensionId}`]);

    // Every write from the decision on is without the marker: a later message, and a crash's restart.
    const from = store.sets.length;
    await r.runtime.send("asker", {});
    await waitUntil(() => store.sets.length > from, "a checkpoint after the decision");
    expect(await r.store.marker("asker")).toBeUndefined();
    const decidedAt = store.sets.findIndex((set) => set.state[SUSPENSION_KEY] === undefined && set.name === "asker" && store.sets.indexOf(set) > 0);
    expect(decidedAt).toBeGreaterThanOrEqual(0);
    for (const set of store.sets.slice(decidedAt)) expect((set.state[SUSPENSION_KEY] as { suspensionId?: string } | undefined)?.suspensionId).not.toBe(suspensionId);

    // A new process on the same store: the pause stays decided.
    await r.runtime.stop();
    const again = new Asker("asker");
    const audit = new MemoryAuditSink();
    const second = await whenStarted(new Runtime({ root: [again], store, clock: new TestClock(r.clock.now()), auditSink: audit, logger: silentLogger }));
    try {
      expect(again.status).toBe(ProcessStatus.RUNNING);
      expect(second.listSuspended()).toEqual([]);
      expect(again.denied).toEqual([]);
      expect(audit.events.filter((e) => e.event === "agent.deny" || e.event === "agent.suspend")).toEqual([]);
    } finally {
      await second.stop();
    }
    expect(r.audit.events.filter((e) => e.event === "agent.deny")).toHaveLength(1);
  });
});
