import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  ProcessStatus,
  StartFailedError,
  SUSPENSION_KEY,
  uuidv7,
  type JsonObject,
  type JsonValue,
  type Message,
} from "../../../src/index.js";
import { isoTime } from "../../../src/time/clock.js";
import { expectIsoMs, Pausable, pausableRig, RecordingStore, rig, startedRig, teardown } from "./helpers.js";
import { rejectsWithCode } from "../../support/outcome.js";
import { turns, waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

/** handle() writes a pending action into state (no checkpoint of its own) and suspends itself. */
class Pending extends AgentProcess<{ pending?: JsonObject; note?: string }> {
  override async handle(message: Message): Promise<void> {
    this.state.pending = { action: "pay", amount: message.payload.amount ?? 0 };
    this.suspend("approve payment");
  }
}

describe("the marker (S4)", () => {
  it("SUSPENSION_KEY is exported and is the reserved key", () => {
    expect(SUSPENSION_KEY).toBe("_civitas.suspended");
  });

  it("is { reason, since (ISO ms), approver: null, suspensionId, identity }, in state, in the store and on agent.suspension", async () => {
    const { agent, ...r } = await pausableRig();
    expect(agent.suspension).toBeUndefined();
    await r.clock.advance(1234);
    await r.runtime.suspend("a", "needs a human");
    const marker = agent.suspension!;
    expect(Object.keys(marker).sort()).toEqual(["approver", "identity", "reason", "since", "suspensionId"]);
    expect(marker.identity).toEqual({ version: null, capabilities: [] });
    expect(marker.reason).toBe("needs a human");
    expect(marker.approver).toBeNull();
    expectIsoMs(marker.since);
    expect(marker.since).toBe(isoTime(r.clock.now()));
    expect(typeof marker.suspensionId).toBe("string");
    expect(marker.suspensionId.length).toBeGreaterThan(0);
    expect(agent.state[SUSPENSION_KEY]).toEqual(marker);
    expect(await r.store.marker("a")).toEqual(marker);
  });

  it("is stored in the SAME store.set as the pending action written before suspend", async () => {
    const agent = new Pending("payer");
    const r = await startedRig([agent]);
    await r.runtime.send("payer", { amount: 42 });
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await waitUntil(() => r.store.setsOf("payer").some((s) => s.state[SUSPENSION_KEY] !== undefined), "marker persisted");
    const sets = r.store.setsOf("payer");
    const carrying = sets.filter((s) => s.state[SUSPENSION_KEY] !== undefined);
    // The first write carries the action and its pause, flagged as not announced until onSuspend and the receipt are
    // done; the second records the announcement (a kill between the two re-announces the pause on restart).
    expect(carrying).toHaveLength(2);
    expect(carrying[0]!.state.pending).toEqual({ action: "pay", amount: 42 });
    expect(carrying[0]!.state[SUSPENSION_KEY]).toEqual({ ...agent.suspension, announced: false });
    expect(carrying[1]!.state).toEqual({ pending: { action: "pay", amount: 42 }, [SUSPENSION_KEY]: agent.suspension });
    // no earlier write had the pending action without the marker
    expect(sets.filter((s) => s.state.pending !== undefined && s.state[SUSPENSION_KEY] === undefined)).toEqual([]);
    expect(await r.store.get("payer")).toEqual({ pending: { action: "pay", amount: 42 }, [SUSPENSION_KEY]: agent.suspension });
  });

  it("user code that deletes or edits state[SUSPENSION_KEY] and checkpoints cannot un-suspend", async () => {
    const { agent, ...r } = await pausableRig();
    const { store } = r;
    await r.runtime.suspend("a", "hold");
    const marker = agent.suspension!;

    delete agent.state[SUSPENSION_KEY];
    agent.state.note = "user wrote this";
    await agent.checkpoint();
    expect(await store.get("a")).toEqual({ note: "user wrote this", [SUSPENSION_KEY]: marker });

    agent.state[SUSPENSION_KEY] = { reason: "forged", since: marker.since, approver: "mallory", suspensionId: "forged-id" };
    await agent.checkpoint();
    expect(await store.marker("a")).toEqual(marker);

    agent.state = { replaced: true };
    await agent.checkpoint();
    expect(await store.get("a")).toEqual({ replaced: true, [SUSPENSION_KEY]: marker });

    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension).toEqual(marker);

    // and after a restart the runtime's marker is what comes back
    await r.runtime.stop();
    const again = new Pausable("a");
    await startedRig([again], { store });
    expect(again.status).toBe(S.SUSPENDED);
    expect(again.suspension).toEqual(marker);
  });

  it("user code cannot suspend durably by writing a fake marker into state while RUNNING", async () => {
    const { agent, ...r } = await pausableRig();
    const { store } = r;
    agent.state[SUSPENSION_KEY] = { reason: "fake", since: isoTime(0), approver: null, suspensionId: uuidv7() };
    await agent.checkpoint();
    expect(await store.marker("a")).toBeUndefined();
    expect(agent.status).toBe(S.RUNNING);
  });

  it("a cleared marker is a removed key, not null (state, store, getter)", async () => {
    const { agent, ...r } = await pausableRig();
    agent.state.keep = 1;
    await r.runtime.suspend("a");
    await r.runtime.resume("a", "alice");
    expect(agent.suspension).toBeUndefined();
    expect(Object.hasOwn(agent.state, SUSPENSION_KEY)).toBe(false);
    const last = r.store.setsOf("a").at(-1)!;
    expect(Object.hasOwn(last.state, SUSPENSION_KEY)).toBe(false);
    const stored = (await r.store.get("a"))!;
    expect(Object.hasOwn(stored, SUSPENSION_KEY)).toBe(false);
    expect(stored).toEqual({ keep: 1 });
  });

  const MALFORMED: Array<[string, JsonValue]> = [
    ["null", null],
    ["a string", "yes"],
    ["an array", []],
    ["a number reason", { reason: 1, since: "2024-01-01T00:00:00.000Z", approver: null, suspensionId: "x" }],
    ["an unparsable since", { reason: "r", since: "yesterday", approver: null, suspensionId: "x" }],
    ["a non-null approver", { reason: "r", since: "2024-01-01T00:00:00.000Z", approver: "mallory", suspensionId: "x" }],
    ["a missing suspensionId", { reason: "r", since: "2024-01-01T00:00:00.000Z", approver: null }],
    ["an empty suspensionId", { reason: "r", since: "2024-01-01T00:00:00.000Z", approver: null, suspensionId: "" }],
  ];

  it.each(MALFORMED)("a stored marker that is %s fails start with START_FAILED caused by STATE_SCHEMA", async (_what, value) => {
    const store = new RecordingStore();
    await store.inner.set("a", { work: 1, [SUSPENSION_KEY]: value });
    const agent = new Pausable("a");
    const r = rig([agent], { store });
    const error = await rejectsWithCode(r.runtime.start(), "START_FAILED");
    expect(error).toBeInstanceOf(StartFailedError);
    expect((error.cause as { code?: string }).code).toBe("STATE_SCHEMA");
    expect(agent.startCalls).toBe(0);
    expect(agent.status).toBe(S.CRASHED);
    expect(agent.entered).toBe(0);
  });
});

describe("write-ahead safety (S5)", () => {
  it("a store that rejects during suspend: still SUSPENDED, suspend resolves, warned, audited durable:false, span degraded", async () => {
    const { agent, ...r } = await pausableRig("a", { tracing: true });
    const { store } = r;
    await r.runtime.send("a", { seq: 1 });
    await waitUntil(() => agent.handled.length === 1, "first message");
    store.failSets = true;
    await r.runtime.suspend("a", "risky");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension?.reason).toBe("risky");

    const warnings = r.logs.filter((l) => l.level === "warn" && /degraded durability/.test(l.message));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toContain("'a'");

    const audits = r.audit.ofType("agent.suspend", "a");
    expect(audits).toHaveLength(1);
    expect(audits[0]!.details.durable).toBe(false);

    const spans = r.tracing!.named("civitas.agent.suspend");
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes["civitas.suspend.durable"]).toBe(false);
    expect(spans[0]!.events.map((e) => e.name)).toContain("civitas.durability.degraded");

    // it never falls back to RUNNING, however long we wait or whatever arrives
    await r.runtime.send("a", { seq: 2 });
    await r.clock.advance(600_000);
    await turns(20);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.handled).toEqual([1]);
    expect(r.statuses.filter((c) => c.agent === "a" && c.from === S.SUSPENDED)).toEqual([]);
  });

  it("with a healthy store the same suspend is durable:true and its span carries no degraded event", async () => {
    const r = await pausableRig("a", { tracing: true });
    await r.runtime.suspend("a", "fine");
    expect(r.audit.ofType("agent.suspend", "a")[0]!.details.durable).toBe(true);
    const span = r.tracing!.named("civitas.agent.suspend")[0]!;
    expect(span.attributes["civitas.suspend.durable"]).toBe(true);
    expect(span.events.map((e) => e.name)).not.toContain("civitas.durability.degraded");
    expect(r.logs.filter((l) => /degraded durability/.test(l.message))).toEqual([]);
  });

  it("the in-memory pause comes first: status is SUSPENDED while the marker's store.set is still in flight", async () => {
    const { agent, ...r } = await pausableRig();
    const { store } = r;
    const seen: string[] = [];
    store.onSet = (_name, state) => seen.push(`${agent.status}:${markerKind(state)}`);
    await r.runtime.suspend("a");
    expect(seen).toEqual(["SUSPENDED:marker, not announced", "SUSPENDED:marker"]);
  });
});

function markerKind(state: JsonObject): string {
  const marker = state[SUSPENSION_KEY] as JsonObject | undefined;
  if (marker === undefined) return "no-marker";
  return marker.announced === false ? "marker, not announced" : "marker";
}
