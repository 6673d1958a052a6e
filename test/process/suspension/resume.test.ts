import type { Context } from "@opentelemetry/api";
import { BasicTracerProvider, type ReadableSpan, type Span, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, ResumeRefusedError, SUSPENSION_KEY, type AuthorizeResume, type SuspensionMarker } from "../../../src/index.js";
import { expectIsoMs, heldAuthorizer, Pausable, pausableRig, rig, startedRig, suspendedRig, expectRefusedWithCause, suspendedRigWithThrowingAuthorizer, teardown, TimelineAudit, watchNothingSent } from "./helpers.js";
import { gate, turns, waitUntil } from "../../support/agents.js";
import { rejectsWithCode, track } from "../../support/outcome.js";

afterEach(teardown);

const S = ProcessStatus;

/** Writes `span-end:<name>` into `timeline` for the suspend and resume spans. */
function timelineProvider(timeline: string[]): BasicTracerProvider {
  const processor: SpanProcessor = {
    onStart: (_span: Span, _ctx: Context) => undefined,
    onEnd: (span: ReadableSpan) => {
      if (span.name === "civitas.agent.suspend" || span.name === "civitas.agent.resume") timeline.push(`span-end:${span.name}`);
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  return new BasicTracerProvider({ spanProcessors: [processor] });
}

describe("approver validation (S6)", () => {
  const BAD: Array<[string, unknown]> = [
    ["an empty string", ""],
    ["whitespace", "   "],
    ["undefined", undefined],
    ["a number", 42],
    ["null", null],
  ];

  it.each(BAD)("INVALID_APPROVER for %s, rejected before anything is sent", async (_what, approver) => {
    const r = await suspendedRig();
    const { agent, runtime } = r;
    await runtime.send("a", { seq: 1 });
    const nothingSent = watchNothingSent(r);
    await rejectsWithCode(runtime.resume("a", approver as string), "INVALID_APPROVER");
    await rejectsWithCode(runtime.resume("a", approver as string, { suspensionId: agent.suspension!.suspensionId }), "INVALID_APPROVER");
    await nothingSent(10);
    expect(agent.resumes).toEqual([]);
    expect(agent.handled).toEqual([]);
  });

  it("an invalid approver is refused even for a RUNNING agent (the no-op still validates)", async () => {
    const r = await pausableRig();
    await rejectsWithCode(r.runtime.resume("a", ""), "INVALID_APPROVER");
    await rejectsWithCode(r.runtime.resume("a", "\t\n"), "INVALID_APPROVER");
  });

  it("AGENT_NOT_FOUND for unknown names on suspend and resume", async () => {
    const { runtime } = await suspendedRig();
    await rejectsWithCode(runtime.suspend("nobody", "x"), "AGENT_NOT_FOUND");
    await rejectsWithCode(runtime.resume("nobody", "alice"), "AGENT_NOT_FOUND");
    await rejectsWithCode(runtime.resume("nobody", "alice", { suspensionId: "s" }), "AGENT_NOT_FOUND");
  });
});

describe("authorizeResume (SPEC 11.8)", () => {
  const REFUSALS: Array<[string, () => AuthorizeResume]> = [
    ["returns false", () => () => false],
    ["resolves false", () => async () => false],
    ["returns Promise<false>", () => () => Promise.resolve(false)],
  ];

  it.each(REFUSALS)("RESUME_REFUSED when the hook %s; the agent stays SUSPENDED", async (_what, make) => {
    const calls: Array<[string, string, SuspensionMarker]> = [];
    const refuse = make();
    const { agent, runtime, audit, store } = await suspendedRig({
      authorizeResume: (name, approver, marker) => {
        calls.push([name, approver, marker]);
        return refuse(name, approver, marker);
      },
    });
    await runtime.send("a", { seq: 1 });
    const marker = agent.suspension!;
    const setsBefore = store.sets.length;
    const error = await rejectsWithCode(runtime.resume("a", "alice"), "RESUME_REFUSED");
    expect(error).toBeInstanceOf(ResumeRefusedError);
    expect(calls).toEqual([["a", "alice", marker]]);
    await turns(10);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension).toEqual(marker);
    expect(await store.marker("a")).toEqual(marker);
    expect(store.sets.length).toBe(setsBefore);
    expect(audit.ofType("agent.resume")).toEqual([]);
    expect(agent.resumes).toEqual([]);
    expect(agent.handled).toEqual([]);
  });

  it("a throwing hook refuses with RESUME_REFUSED and keeps the throw as cause", async () => {
    const { agent, runtime, boom } = await suspendedRigWithThrowingAuthorizer();
    await expectRefusedWithCause(agent, runtime.resume("a", "alice"), boom);
  });

  it("a hook whose promise rejects refuses too, keeping the reason as cause", async () => {
    const boom = new Error("timeout talking to policy");
    const { agent, runtime } = await suspendedRig({ authorizeResume: async () => Promise.reject(boom) });
    await expectRefusedWithCause(agent, runtime.resume("a", "alice"), boom);
  });

  it("a hook that allows lets the resume through; it is called only while SUSPENDED", async () => {
    const calls: string[] = [];
    const agent = new Pausable("a");
    const r = rig([agent], {
      authorizeResume: (name, approver, marker) => {
        calls.push(`${name}/${approver}/${marker.reason}`);
        return approver === "alice";
      },
    });
    await r.runtime.start();
    await r.runtime.resume("a", "bob"); // running: no-op, hook not consulted
    expect(calls).toEqual([]);
    await r.runtime.suspend("a", "why");
    await rejectsWithCode(r.runtime.resume("a", "bob"), "RESUME_REFUSED");
    await rejectsWithCode(r.runtime.resume("a", "alice", { suspensionId: "not-the-id" }), "STALE_APPROVAL");
    await r.runtime.resume("a", "alice");
    expect(agent.status).toBe(S.RUNNING);
    expect(calls).toEqual(["a/bob/why", "a/alice/why"]);
    await r.runtime.resume("a", "alice");
    expect(calls).toHaveLength(2);
  });
});

describe("resume by identity (STALE_APPROVAL) and the no-op resume", () => {
  it("an old suspensionId cannot lift a newer pause; the new pause stays", async () => {
    const { agent, runtime } = await suspendedRig();
    const first = agent.suspension!.suspensionId;
    await runtime.resume("a", "alice", { suspensionId: first });
    expect(agent.status).toBe(S.RUNNING);
    await runtime.suspend("a", "second");
    const second = agent.suspension!.suspensionId;
    expect(second).not.toBe(first);
    const error = await rejectsWithCode(runtime.resume("a", "alice", { suspensionId: first }), "STALE_APPROVAL");
    expect(error.message).toContain(first);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension?.suspensionId).toBe(second);
    expect(agent.resumes).toEqual(["alice"]);
    await runtime.resume("a", "carol", { suspensionId: second });
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.resumes).toEqual(["alice", "carol"]);
  });

  it("STALE_APPROVAL for a suspensionId when the agent is not suspended (settle once)", async () => {
    const { agent, runtime, audit } = await suspendedRig();
    const id = agent.suspension!.suspensionId;
    await runtime.resume("a", "alice", { suspensionId: id });
    await rejectsWithCode(runtime.resume("a", "alice", { suspensionId: id }), "STALE_APPROVAL");
    expect(audit.ofType("agent.resume", "a")).toHaveLength(1);
    expect(agent.resumes).toEqual(["alice"]);
  });

  it("resume of a RUNNING agent without suspensionId is a no-op: no hook, audit, persist or onResume", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.resume("a", "alice");
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.resumes).toEqual([]);
    expect(r.audit.ofType("agent.resume")).toEqual([]);
    expect(r.store.sets).toEqual([]);
    expect(r.statuses.filter((c) => c.agent === "a")).toHaveLength(1);
  });
});

describe("effect order", () => {
  it("suspend: SUSPENDED in memory -> marker persisted -> onSuspend -> audit -> span ended -> runtime.suspend resolves", async () => {
    const timeline: string[] = [];
    const agent = new Pausable("a");
    agent.timeline = timeline;
    const r = rig([agent], {
      audit: new TimelineAudit(timeline),
      tracerProvider: timelineProvider(timeline),
      onStatus: (c) => timeline.push(`status:${c.to}`),
    });
    r.store.onSet = (_n, state) => timeline.push(`set:${state[SUSPENSION_KEY] === undefined ? "no-marker" : "marker"}`);
    await r.runtime.start();
    await r.runtime.send("a", { seq: 1 });
    await waitUntil(() => agent.handled.length === 1, "first message");
    timeline.length = 0;
    const done = r.runtime.suspend("a", "r").then(() => timeline.push("suspend-resolved"));
    await r.runtime.send("a", { seq: 2 });
    await done;
    await turns(10);
    expect(timeline).toEqual(["status:SUSPENDED", "set:marker", "onSuspend:r", "audit:agent.suspend", "set:marker", "span-end:civitas.agent.suspend", "suspend-resolved"]);
    // the first write stores the pause as not announced yet, the second once onSuspend and the receipt are done
    expect(r.store.setsOf("a").slice(-2).map((s) => (s.state[SUSPENSION_KEY] as { announced?: boolean }).announced)).toEqual([false, undefined]);
  });

  it("resume: authorize -> audit -> marker cleared in the store -> RUNNING -> onResume -> span ended -> resolved -> next business message", async () => {
    const timeline: string[] = [];
    const agent = new Pausable("a");
    const r = rig([agent], {
      audit: new TimelineAudit(timeline),
      tracerProvider: timelineProvider(timeline),
      onStatus: (c) => timeline.push(`status:${c.to}`),
      authorizeResume: () => {
        timeline.push("authorize");
        return true;
      },
    });
    await r.runtime.start();
    await r.runtime.suspend("a", "r");
    await r.runtime.send("a", { seq: 1 });
    await r.runtime.send("a", { seq: 2 });
    agent.timeline = timeline;
    r.store.onSet = (_n, state) => timeline.push(`set:${state[SUSPENSION_KEY] === undefined ? "no-marker" : "marker"}`);
    timeline.length = 0;
    await r.runtime.resume("a", "alice");
    timeline.push("resume-resolved");
    await waitUntil(() => agent.handled.length === 2, "queued messages");
    expect(timeline).toEqual([
      "authorize",
      "audit:agent.resume",
      "set:no-marker",
      "status:RUNNING",
      "onResume:alice",
      "span-end:civitas.agent.resume",
      "resume-resolved",
      "handle:1",
      "handle:2",
    ]);
  });

  it("the next business message is taken only after runtime.resume resolved (no hooks, no tracing)", async () => {
    const timeline: string[] = [];
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a");
    await r.runtime.send("a", { seq: 1 });
    agent.timeline = timeline;
    await r.runtime.resume("a", "alice");
    timeline.push("resume-resolved");
    await waitUntil(() => agent.handled.length === 1, "queued message");
    expect(timeline).toEqual(["onResume:alice", "resume-resolved", "handle:1"]);
  });

  it("runtime.stop while authorizeResume is still deciding keeps the pause: no agent.resume receipt, marker kept in the store", async () => {
    const { authorizeResume, decision, asked } = heldAuthorizer();
    const { agent, ...r } = await pausableRig("a", { authorizeResume });
    await r.runtime.suspend("a", "hold");
    const marker = agent.suspension!;
    const resuming = track(r.runtime.resume("a", "alice"));
    await waitUntil(() => asked() === 1, "authorizeResume called");
    const stopping = track(r.runtime.stop());
    await turns(10);
    decision.open();
    await stopping.promise;
    await turns(10);
    expect(resuming.state).toBe("rejected");
    expect(agent.status).toBe(S.STOPPED);
    expect(agent.resumes).toEqual([]);
    // graceful shutdown keeps the marker (S8); the agent never became RUNNING, so no resume receipt either
    expect(r.statuses.filter((c) => c.agent === "a" && c.to === S.RUNNING)).toHaveLength(1);
    expect(r.audit.ofType("agent.resume", "a")).toEqual([]);
    expect(await r.store.marker("a")).toEqual(marker);
    const again = new Pausable("a");
    await startedRig([again], { store: r.store });
    expect(again.status).toBe(S.SUSPENDED);
  });

  it("onSuspend that throws leaves the agent SUSPENDED (logged, audited, runtime.suspend resolves)", async () => {
    const agent = new Pausable("a");
    agent.throwOnSuspend = true;
    const r = await startedRig([agent]);
    await r.runtime.suspend("a", "r");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspends).toEqual(["r"]);
    expect(r.audit.ofType("agent.suspend", "a")).toHaveLength(1);
    expect(r.logs.some((l) => l.level === "error" && l.message.includes("onSuspend"))).toBe(true);
    await r.runtime.send("a", { seq: 1 });
    await turns(10);
    expect(agent.handled).toEqual([]);
    await r.runtime.resume("a", "alice");
    await waitUntil(() => agent.handled.length === 1, "handled after resume");
  });

  it("a slow onSuspend holds runtime.suspend until it finishes, and takes no business meanwhile", async () => {
    const hold = gate();
    class Slow extends Pausable {
      override async onSuspend(reason: string): Promise<void> {
        await super.onSuspend(reason);
        await hold.promise;
      }
    }
    const agent = new Slow("a");
    const r = await startedRig([agent]);
    const suspending = track(r.runtime.suspend("a", "slow"));
    await r.runtime.send("a", { seq: 1 });
    await waitUntil(() => agent.suspends.length === 1, "onSuspend entered");
    await turns(10);
    expect(suspending.state).toBe("pending");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.handled).toEqual([]);
    hold.open();
    await suspending.promise;
  });
});

describe("observability (S9)", () => {
  it("spans civitas.agent.suspend / civitas.agent.resume and audit details are exactly as specified", async () => {
    const { agent, runtime, audit, tracing, clock } = await suspendedRig({ tracing: true, reason: "awaiting approval" });
    const marker = agent.suspension!;
    await clock.advance(10);
    await runtime.resume("a", "alice");

    const suspendSpans = tracing!.named("civitas.agent.suspend");
    expect(suspendSpans).toHaveLength(1);
    expect(suspendSpans[0]!.attributes).toMatchObject({
      "civitas.agent.name": "a",
      "civitas.suspend.reason": "awaiting approval",
      "civitas.suspend.id": marker.suspensionId,
      "civitas.suspend.durable": true,
    });
    const resumeSpans = tracing!.named("civitas.agent.resume");
    expect(resumeSpans).toHaveLength(1);
    expect(resumeSpans[0]!.attributes).toMatchObject({
      "civitas.agent.name": "a",
      "civitas.suspend.id": marker.suspensionId,
      "civitas.resume.approver": "alice",
    });

    const suspendEvents = audit.ofType("agent.suspend", "a");
    expect(suspendEvents).toHaveLength(1);
    expect(suspendEvents[0]!.details).toEqual({ reason: "awaiting approval", suspensionId: marker.suspensionId, since: marker.since, durable: true });
    expectIsoMs(suspendEvents[0]!.ts);
    const resumeEvents = audit.ofType("agent.resume", "a");
    expect(resumeEvents).toHaveLength(1);
    expect(resumeEvents[0]!.details).toEqual({ approver: "alice", suspensionId: marker.suspensionId, reason: "awaiting approval" });
    expect(resumeEvents[0]!.signerId).toBe("civitas-runtime");
  });

  it("the resume audit records the reason current at resume time (after a reason update)", async () => {
    const { agent, runtime, audit } = await suspendedRig({ reason: "first" });
    await runtime.suspend("a", "updated");
    const id = agent.suspension!.suspensionId;
    await runtime.resume("a", "alice", { suspensionId: id });
    expect(audit.ofType("agent.resume", "a")[0]!.details).toEqual({ approver: "alice", suspensionId: id, reason: "updated" });
  });
});
