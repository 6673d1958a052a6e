/**
 * Halting or permanently removing a SUSPENDED agent cancels its pause on the
 * record: an `agent.suspend.cancelled` receipt `{ suspensionId, cause, by }`
 * comes before its marker is cleared. A graceful stop keeps the pause.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, SUSPENSION_KEY, type AuditEvent, type Message } from "../../../src/index.js";
import { auditFailingOn, dynamicRig, Pausable, pausableRig, rig, startedRig, teardown, TimelineAudit } from "./helpers.js";
import { waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

function cancellations(events: readonly AuditEvent[]): AuditEvent[] {
  return events.filter((e) => e.event === "agent.suspend.cancelled");
}

describe("a halt (civitas.eval.halt) of a suspended agent", () => {
  it("records agent.suspend.cancelled { cause: 'halt', by: the sender } before the marker is cleared, and stops it", async () => {
    const timeline: string[] = [];
    const agent = new Pausable("a");
    const r = rig([agent], { audit: new TimelineAudit(timeline) });
    r.store.onSet = (_name, state) => timeline.push(SUSPENSION_KEY in state ? "set:marker" : "set:cleared");
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    const id = agent.suspension!.suspensionId;
    timeline.length = 0;
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    expect(timeline.slice(0, 2)).toEqual(["audit:agent.suspend.cancelled", "set:cleared"]);
    expect(cancellations(r.audit.events).map((e) => e.details)).toEqual([{ suspensionId: id, cause: "halt", by: "_runtime" }]);
    expect(await r.store.marker("a")).toBeUndefined();
    expect(agent.denies).toEqual([]);
    expect(agent.resumes).toEqual([]);
  });

  it("names the agent that sent the halt as `by`", async () => {
    class Halter extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        await this.send(message.payload.target as string, {}, { type: "civitas.eval.halt" });
      }
    }
    const agent = new Pausable("a");
    const r = await startedRig([agent, new Halter("boss")]);
    await r.runtime.suspend("a", "hold");
    await r.runtime.send("boss", { target: "a" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    expect(cancellations(r.audit.events)[0]?.details).toMatchObject({ cause: "halt", by: "boss" });
  });

  it("records nothing for a running agent (there is no pause to cancel)", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    expect(cancellations(r.audit.events)).toEqual([]);
  });

  it("keeps the marker when the receipt cannot be recorded (the log and the store agree the pause is live), and still stops", async () => {
    const audit = auditFailingOn("agent.suspend.cancelled");
    const { agent, ...r } = await pausableRig("a", { audit });
    await r.runtime.suspend("a", "hold");
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    expect(await r.store.marker("a")).toBeDefined();
    expect(r.logs.some((l) => l.level === "error" && l.message.includes("its marker is kept"))).toBe(true);
  });
});

describe("a graceful stop keeps the pause", () => {
  it("runtime.stop records no cancellation and keeps the marker", async () => {
    const r = await pausableRig();
    const { store } = r;
    await r.runtime.suspend("a", "hold");
    await r.runtime.stop();
    expect(cancellations(r.audit.events)).toEqual([]);
    expect(await store.marker("a")).toBeDefined();
  });
});

describe("a permanent removal of a suspended dynamic child", () => {
  it.each([
    ["despawn", "despawned"],
    ["stop", "stopped"],
  ] as const)("%s: cancelled with cause '%s' by the supervisor, receipt before the cleared marker", async (how, cause) => {
    const { r, dyn } = await dynamicRig();
    const timeline: string[] = [];
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "approval");
    const id = w.suspension!.suspensionId;
    r.store.onSet = (name, state) => {
      if (name === "w") timeline.push(SUSPENSION_KEY in state ? "set:marker" : "set:cleared");
    };
    const emit = r.audit.emit.bind(r.audit);
    r.audit.emit = (event: AuditEvent): void => {
      timeline.push(`audit:${event.event}`);
      emit(event);
    };
    if (how === "despawn") await dyn.despawn("w");
    else await dyn.stop("w", { drain: "all" });
    expect(cancellations(r.audit.events).map((e) => e.details)).toEqual([{ suspensionId: id, cause, by: "dyn" }]);
    expect(timeline.indexOf("audit:agent.suspend.cancelled")).toBeGreaterThanOrEqual(0);
    expect(timeline.indexOf("audit:agent.suspend.cancelled")).toBeLessThan(timeline.indexOf("set:cleared"));
    expect(await r.store.marker("w")).toBeUndefined();
  });

  it("an agent's own this.despawn(child) cancels the child's pause too", async () => {
    const { r, dyn } = await dynamicRig();
    const boss = await dyn.spawn(Pausable, "boss");
    await boss.spawn(Pausable, "kid");
    await r.runtime.suspend("kid", "approval");
    await boss.despawn("kid");
    expect(cancellations(r.audit.events).map((e) => e.details.cause)).toEqual(["despawned"]);
  });

  it("a halt of a suspended dynamic child is one cancellation (cause 'halt'), not a second one at its removal", async () => {
    const { r, dyn } = await dynamicRig();
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "approval");
    await r.runtime.send("w", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => w.status === S.STOPPED && dyn.children.length === 0, "removed");
    await waitUntil(() => r.logs.some((l) => l.message.includes("removed from 'dyn' (clean_exit)")), "removal done");
    expect(cancellations(r.audit.events).map((e) => e.details.cause)).toEqual(["halt"]);
  });

  it("restarts exhausted: a pause restored by restarts that keep failing is cancelled with cause 'restarts_exhausted'", async () => {
    class Fragile extends Pausable {
      failStarts = 0;
      override async onStart(): Promise<void> {
        await super.onStart();
        if (this.failStarts > 0) {
          this.failStarts--;
          throw new Error("cannot start");
        }
      }
      override async handle(message: Message): Promise<Message | void> {
        if (message.payload.op !== "pause-and-crash") return super.handle(message);
        // the documented order: ask for the pause, store it with the pending action, then fail
        this.state.pending = { amount: 1 };
        this.suspend("approval");
        await this.checkpoint();
        this.failStarts = 10;
        throw new Error("crash after storing the pause");
      }
    }
    const { r, dyn } = await dynamicRig({ dynamic: { maxRestarts: 1 } });
    await dyn.spawn(Fragile, "w");
    await r.runtime.send("w", { op: "pause-and-crash" });
    await waitUntil(() => dyn.children.length === 0, "w removed after exhausting restarts");
    await waitUntil(() => cancellations(r.audit.events).length === 1, "the cancellation recorded");
    const [row] = cancellations(r.audit.events);
    expect(row?.details).toMatchObject({ cause: "restarts_exhausted", by: "dyn" });
    // the pause was never announced (no start got that far): its receipt comes first, so the log holds what is cancelled
    const suspendRows = r.audit.events.filter((e) => e.event === "agent.suspend" && e.agent === "w");
    expect(suspendRows.map((e) => e.details.suspensionId)).toEqual([row?.details.suspensionId]);
    expect(r.audit.events.indexOf(suspendRows[0]!)).toBeLessThan(r.audit.events.indexOf(row!));
    expect(await r.store.marker("w")).toBeUndefined();
  });
});
