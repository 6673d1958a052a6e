/**
 * Pending defects found by a review of supervision (src/supervision, src/runtime):
 * each test fails on the code as reviewed, for the reason its name states.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  ProcessStatus,
  Supervisor,
  type Logger,
  type Message,
} from "../../src/index.js";
import { settle } from "../../src/entries/testing.js";
import { Probe, gate, harness, stopAll, turns, waitUntil } from "../support/agents.js";
import { GatedStore } from "../support/review-kit.js";

afterEach(stopAll);

/** Handles a tick by sending itself the next one (a self-scheduling worker). */
class Ticker extends AgentProcess {
  ticks = 0;
  override async handle(message: Message): Promise<void> {
    this.ticks++;
    await settle();
    if (message.payload.op === "tick") await this.send(this.name, { op: "tick" });
  }
}

describe("DynamicSupervisor.stop drain modes", () => {
  it('stop(name, { drain: "all" }) handles the messages queued when it was called, not the ones enqueued during the drain (it ends before its timeout)', async () => {
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const ticker = await dyn.spawn(Ticker, "t");
    await runtime.send("t", { op: "tick" });
    await waitUntil(() => ticker.ticks >= 3, "a few ticks");
    const ticksAtStop = ticker.ticks;
    let stopped = false;
    void dyn.stop("t", { drain: "all" }).then(() => (stopped = true));
    await turns(200);
    // at most the one tick queued when stop was called (plus the one in hand) may be handled
    const handledDuringDrain = ticker.ticks - ticksAtStop;
    expect(handledDuringDrain).toBeLessThanOrEqual(2);
    expect(stopped).toBe(true);
    expect(ticker.status).toBe(ProcessStatus.STOPPED);
  });
});

/** A logger that keeps the errors it is given. */
function errorLog(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (message) => errors.push(message) };
  return { logger, errors };
}

describe("runtime.stop() and a despawn in flight", () => {
  it("runtime.stop() resolves only once a despawn in flight is done, so closing the store afterwards loses no write", async () => {
    const store = new GatedStore();
    const { logger, errors } = errorLog();
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }), { store, logger });
    await runtime.start();
    const w = await dyn.spawn(Probe, "w");
    await runtime.suspend("w", "needs approval");
    expect(w.status).toBe(ProcessStatus.SUSPENDED);

    // the despawn's marker clearing reads the store: a durable store takes a while
    const held = gate();
    store.holdNext = { name: "w", gate: held };
    let despawned = false;
    const despawning = dyn.despawn("w").then(() => (despawned = true));
    await waitUntil(() => w.status === ProcessStatus.STOPPED, "w to stop");
    await turns(10);

    let stopped = false;
    const stopping = runtime.stop().then(() => (stopped = true));
    await turns(20);
    expect(stopped).toBe(false); // the despawn's write is still in flight
    held.open();
    await stopping;
    const despawnDoneAtStop = despawned;
    // the application now closes the store it owns (SPEC 11.5: the runtime never does)
    await store.close();
    await despawning;
    await turns(10);
    expect(errors.filter((e) => e.includes("could not clear the suspension marker"))).toEqual([]);
    expect(despawnDoneAtStop).toBe(true);
  });
});

describe("DynamicSupervisor despawn cancels a pending restart backoff", () => {
  it("despawn of a child waiting out its restart backoff disarms the backoff timer (TSDoc: the pending backoff is cancelled)", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 60_000, maxRestarts: 5 });
    const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const w = await dyn.spawn(Probe, "w");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => w.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    expect(clock.pendingTimers).toBe(1); // the restart backoff
    await dyn.despawn("w");
    await turns(10);
    expect(dyn.children).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
