/**
 * `this.suspend()` returns the pause it asked for, and `runtime.suspend()`
 * resolves with it — `{ suspensionId, expiresAt? }` — so a reply or a ticket
 * can name exactly what to approve. Everything runs on TestClock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, type Message, type Pause } from "../../../src/index.js";
import { pausableRig, startedRig, teardown } from "./helpers.js";
import { waitUntil } from "../../support/agents.js";

afterEach(teardown);

const START_MS = 1_700_000_000_000;
const iso = (ms: number): string => new Date(ms).toISOString();

/** Asks for a pause from handle() and replies with what this.suspend() returned. */
class Asker extends AgentProcess {
  override async handle(message: Message): Promise<Message> {
    const ms = message.payload.ms;
    const first = this.suspend("approve me", typeof ms === "number" ? { expiresInMs: ms } : {});
    const again = message.payload.twice === true ? this.suspend("approve me, really", { expiresInMs: 9_000 }) : undefined;
    return this.reply({ first: { ...first }, again: again === undefined ? null : { ...again } });
  }
}

describe("this.suspend() returns the pause", () => {
  it("names the pause the agent then enters (suspensionId and deadline), which a reply carries and resume accepts", async () => {
    const agent = new Asker("asker");
    const r = await startedRig([agent]);
    await r.clock.advance(500);
    const reply = await r.runtime.ask("asker", { ms: 2_000 });
    const pause = reply.payload.first as unknown as Pause;
    await waitUntil(() => agent.status === ProcessStatus.SUSPENDED, "suspended");
    expect(pause).toEqual({ suspensionId: agent.suspension!.suspensionId, expiresAt: iso(START_MS + 2_500) });
    expect(agent.suspension!.expiresAt).toBe(iso(START_MS + 2_500));
    await waitUntil(() => r.audit.events.some((e) => e.event === "agent.suspend"), "the agent.suspend receipt");
    expect(r.audit.events.find((e) => e.event === "agent.suspend")?.details).toMatchObject({ suspensionId: pause.suspensionId });
    await r.runtime.resume("asker", "alice", { suspensionId: pause.suspensionId });
    expect(agent.status).toBe(ProcessStatus.RUNNING);
  });

  it("has no expiresAt for a pause without a deadline", async () => {
    const agent = new Asker("asker");
    const r = await startedRig([agent]);
    const reply = await r.runtime.ask("asker", {});
    await waitUntil(() => agent.status === ProcessStatus.SUSPENDED, "suspended");
    expect(reply.payload.first).toEqual({ suspensionId: agent.suspension!.suspensionId });
  });

  it("a second call in the same handler names the same pause, with the deadline it gave last", async () => {
    const agent = new Asker("asker");
    const r = await startedRig([agent]);
    const reply = await r.runtime.ask("asker", { ms: 1_000, twice: true });
    const first = reply.payload.first as unknown as Pause;
    const again = reply.payload.again as unknown as Pause;
    expect(again.suspensionId).toBe(first.suspensionId);
    expect(first.expiresAt).toBe(iso(START_MS + 1_000));
    expect(again.expiresAt).toBe(iso(START_MS + 9_000));
    await waitUntil(() => agent.status === ProcessStatus.SUSPENDED, "suspended");
    expect(agent.suspension).toMatchObject({ suspensionId: first.suspensionId, expiresAt: iso(START_MS + 9_000), reason: "approve me, really" });
  });

  it("refuses with RUNTIME_NOT_STARTED on an agent that belongs to no runtime (there is no pause to name)", () => {
    const agent = new Asker("loose");
    expect(() => agent.suspend("x")).toThrow(expect.objectContaining({ code: "RUNTIME_NOT_STARTED" }) as Error);
  });
});

describe("runtime.suspend() resolves with the pause", () => {
  it("resolves with the suspensionId and deadline of the pause entered, the same as the marker's", async () => {
    const { agent, ...r } = await pausableRig();
    const pause = await r.runtime.suspend("a", "big payment", { expiresInMs: 1_000 });
    expect(pause).toEqual({ suspensionId: agent.suspension!.suspensionId, expiresAt: iso(START_MS + 1_000) });
    await r.runtime.deny("a", "bob", { suspensionId: pause.suspensionId });
    expect(agent.status).toBe(ProcessStatus.RUNNING);
  });

  it("without a deadline has no expiresAt; suspending a suspended agent resolves with its current pause (and a new deadline when given)", async () => {
    const { agent, ...r } = await pausableRig();
    const first = await r.runtime.suspend("a", "review");
    expect(first).toEqual({ suspensionId: agent.suspension!.suspensionId });
    expect(Object.hasOwn(first, "expiresAt")).toBe(false);
    const again = await r.runtime.suspend("a", "review");
    expect(again).toEqual(first);
    const deadline = await r.runtime.suspend("a", "review", { expiresInMs: 5_000 });
    expect(deadline).toEqual({ suspensionId: first.suspensionId, expiresAt: iso(START_MS + 5_000) });
  });
});
