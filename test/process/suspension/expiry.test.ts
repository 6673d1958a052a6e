/**
 * Pauses that expire: `expiresInMs` stores a deadline in the marker; once
 * it passes on the runtime's clock — also while the process was down — the
 * pause is denied by decider "expiry" with its receipt (`expired: true`).
 * Everything here runs on TestClock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, SUSPENSION_KEY, type AuditEvent, type Message } from "../../../src/index.js";
import { MemoryAuditSink } from "../../../src/audit/memory-audit-sink.js";
import { TestClock } from "../../../src/testing/test-clock.js";
import { auditFailingOn, Pausable, pausableRig, RecordingStore, rig, startedRig, teardown } from "./helpers.js";
import { rejectsWithCode } from "../../support/outcome.js";
import { turns, waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;
const START_MS = 1_700_000_000_000;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function denials(events: readonly AuditEvent[]): AuditEvent[] {
  return events.filter((e) => e.event === "agent.deny");
}

describe("a pause with a deadline", () => {
  it("stores the deadline in the marker and the suspend receipt, and is denied by 'expiry' when it passes, not before", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a", "big payment", { expiresInMs: 1_000 });
    const marker = agent.suspension!;
    expect(marker.expiresAt).toBe(iso(START_MS + 1_000));
    expect((await r.store.marker("a")) as { expiresAt?: string }).toMatchObject({ expiresAt: iso(START_MS + 1_000) });
    expect(r.audit.events.find((e) => e.event === "agent.suspend")?.details).toMatchObject({ expiresAt: iso(START_MS + 1_000) });
    expect(r.runtime.listSuspended()).toEqual([{ name: "a", reason: "big payment", since: iso(START_MS), suspensionId: marker.suspensionId, expiresAt: iso(START_MS + 1_000) }]);
    await r.runtime.send("a", { seq: 1 });
    await r.clock.advance(999);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(denials(r.audit.events)).toEqual([]);
    await r.clock.advance(1);
    await waitUntil(() => agent.handled.length === 1, "the queued message handled after the expiry");
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.denies).toEqual([["expiry", marker.suspensionId, `its deadline ${iso(START_MS + 1_000)} passed`]]);
    expect(agent.resumes).toEqual([]);
    expect(denials(r.audit.events).map((e) => e.details)).toEqual([
      { decider: "expiry", suspensionId: marker.suspensionId, reason: `its deadline ${iso(START_MS + 1_000)} passed`, expired: true },
    ]);
    expect(await r.store.marker("a")).toBeUndefined();
    // the denial came before the queued message
    expect(agent.timeline.slice(-2)).toEqual(["onDeny:expiry", "handle:1"]);
  });

  it("this.suspend(reason, { expiresInMs }) from handle(): the deadline counts from the call", async () => {
    class Asker extends AgentProcess {
      denied: string[] = [];
      override async handle(message: Message): Promise<void> {
        this.suspend("approve me", { expiresInMs: message.payload.ms as number });
      }
      override async onDeny(decider: string): Promise<void> {
        this.denied.push(decider);
      }
    }
    const agent = new Asker("asker");
    const r = await startedRig([agent]);
    await r.clock.advance(500);
    await r.runtime.send("asker", { ms: 2_000 });
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    expect(agent.suspension?.expiresAt).toBe(iso(START_MS + 500 + 2_000));
    await r.clock.advance(2_000);
    await waitUntil(() => agent.status === S.RUNNING, "denied by expiry");
    expect(agent.denied).toEqual(["expiry"]);
  });

  it("expiresInMs: 0 denies the pause at once, at the next loop boundary", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a", "hold", { expiresInMs: 0 });
    await waitUntil(() => agent.denies.length === 1, "denied");
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspends).toEqual(["hold"]);
  });

  it("is not put to authorizeResume: the deadline was part of the pause", async () => {
    let asked = 0;
    const agent = new Pausable("a");
    const r = rig([agent], {
      authorizeResume: () => {
        asked++;
        return false;
      },
    });
    await r.runtime.start();
    await r.runtime.suspend("a", "hold", { expiresInMs: 100 });
    await r.clock.advance(100);
    await waitUntil(() => agent.status === S.RUNNING, "expired");
    expect(asked).toBe(0);
  });

  it.each([
    ["negative", -1],
    ["not finite", Number.POSITIVE_INFINITY],
    ["NaN", Number.NaN],
    ["a string", "1000"],
  ])("INVALID_ARGUMENT for an expiresInMs that is %s (runtime.suspend and this.suspend), before anything is sent", async (_what, bad) => {
    const { agent, ...r } = await pausableRig();
    const error = await rejectsWithCode(r.runtime.suspend("a", "hold", { expiresInMs: bad as number }), "INVALID_ARGUMENT");
    expect(error.message).toContain("expiresInMs");
    expect(() => agent.suspend("hold", { expiresInMs: bad as number })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }) as Error);
    await turns(5);
    expect(agent.status).toBe(S.RUNNING);
  });
});

describe("the deadline's timer", () => {
  it.each([
    ["a resume", "resume"],
    ["a deny", "deny"],
  ] as const)("is cleared by %s: nothing happens when the deadline would have passed", async (_what, how) => {
    const { agent, ...r } = await pausableRig();
    const idle = r.clock.pendingTimers;
    await r.runtime.suspend("a", "hold", { expiresInMs: 1_000 });
    expect(r.clock.pendingTimers).toBe(idle + 1);
    if (how === "resume") await r.runtime.resume("a", "alice");
    else await r.runtime.deny("a", "bob");
    expect(r.clock.pendingTimers).toBe(idle);
    await r.clock.advance(5_000);
    expect(denials(r.audit.events).filter((e) => e.details.decider === "expiry")).toEqual([]);
    expect(agent.status).toBe(S.RUNNING);
  });

  it("is cleared by a stop, and armed again (for the time left) by the next start", async () => {
    const store = new RecordingStore();
    const clock = new TestClock(START_MS);
    const r1 = await pausableRig("a", { store, clock });
    const idle = clock.pendingTimers;
    await r1.runtime.suspend("a", "hold", { expiresInMs: 10_000 });
    await r1.runtime.stop();
    expect(clock.pendingTimers).toBe(idle);
    await clock.advance(4_000);
    const second = new Pausable("a");
    await startedRig([second], { store, clock });
    expect(second.status).toBe(S.SUSPENDED);
    await clock.advance(5_999);
    expect(second.status).toBe(S.SUSPENDED);
    await clock.advance(1);
    await waitUntil(() => second.status === S.RUNNING, "expired after the time left");
    expect(second.denies.map(([decider]) => decider)).toEqual(["expiry"]);
  });

  it("a deadline that passed while the process was down is found at restore: denied before any message is handled", async () => {
    const { agent: first, ...r1 } = await pausableRig("a", { clock: new TestClock(START_MS) });
    const { store } = r1;
    await r1.runtime.suspend("a", "hold", { expiresInMs: 1_000 });
    const id = first.suspension!.suspensionId;
    await r1.runtime.stop();

    const audit = new MemoryAuditSink();
    const { agent: second, ...r2 } = await pausableRig("a", { store, clock: new TestClock(START_MS + 60_000), audit });
    await r2.runtime.send("a", { seq: 1 });
    await waitUntil(() => second.handled.length === 1, "handled after the expiry");
    expect(second.timeline.filter((t) => !t.startsWith("onStart"))).toEqual(["onDeny:expiry", "handle:1"]);
    expect(second.denies).toEqual([["expiry", id, `its deadline ${iso(START_MS + 1_000)} passed`]]);
    expect(denials(audit.events)).toHaveLength(1);
    expect(denials(audit.events)[0]?.details).toMatchObject({ decider: "expiry", suspensionId: id, expired: true });
    expect(await store.marker("a")).toBeUndefined();
  });
});

describe("a repeated suspend and the deadline", () => {
  it("keeps since, suspensionId and the deadline when it gives none; replaces the deadline when it gives one", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a", "first", { expiresInMs: 1_000 });
    const { since, suspensionId, expiresAt } = agent.suspension!;
    await r.clock.advance(500);
    await r.runtime.suspend("a", "second");
    expect(agent.suspension).toMatchObject({ since, suspensionId, expiresAt, reason: "second" });
    await r.runtime.suspend("a", "second", { expiresInMs: 2_000 });
    expect(agent.suspension).toMatchObject({ since, suspensionId, reason: "second", expiresAt: iso(START_MS + 500 + 2_000) });
    expect(((await r.store.marker("a")) as { expiresAt?: string }).expiresAt).toBe(iso(START_MS + 2_500));
    const update = r.audit.events.filter((e) => e.event === "agent.suspend.update").at(-1);
    expect(update?.details).toEqual({ reason: "second", suspensionId, expiresAt: iso(START_MS + 2_500) });
    await r.clock.advance(600); // past the first deadline: nothing
    expect(agent.status).toBe(S.SUSPENDED);
    await r.clock.advance(1_400);
    await waitUntil(() => agent.status === S.RUNNING, "expired at the new deadline");
    expect(denials(r.audit.events)).toHaveLength(1);
  });
});

describe("an expiry whose receipt cannot be recorded", () => {
  it("leaves the pause in place (it can still be resumed) and logs why", async () => {
    const audit = auditFailingOn("agent.deny");
    const { agent, ...r } = await pausableRig("a", { audit });
    await r.runtime.suspend("a", "hold", { expiresInMs: 100 });
    await r.clock.advance(100);
    await waitUntil(() => r.logs.some((l) => l.level === "error" && l.message.includes("could not be denied")), "the failure logged");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.denies).toEqual([]);
    expect(await r.store.marker("a")).toBeDefined();
    expect(agent.state[SUSPENSION_KEY]).toBeDefined();
    await r.runtime.resume("a", "alice");
    expect(agent.status).toBe(S.RUNNING);
  });
});
