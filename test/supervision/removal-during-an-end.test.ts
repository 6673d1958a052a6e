/**
 * A removal (despawn, stop) of a child that is already ending on its own (a
 * crash, a STOP from onError) or because its ownership was lost (a write
 * refused with STATE_FENCED while it was parked): the removal joins that
 * end, `onStop` runs once, and the child is not restarted.
 *
 * Written by the adversarial review of the lifecycle phases (issue 12): an
 * end of its own now runs without its loop (stop-sequence.ts), so a parked
 * agent's lost fence and a removal racing an end are pinned here.
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ErrorAction, ProcessStatus, StateFencedError, type JsonObject } from "../../src/index.js";
import { gate, type Gate } from "../support/agents.js";
import { runtimes, sleep, whenStarted, until } from "../support/runtimes.js";
import { Lifecycle } from "../support/probe-agents.js";
import { WrappedStore } from "../support/stores.js";

const runtime = runtimes();

/** Fails every message with `action`; its `onStop` waits for `stopGate`. */
class Ending extends AgentProcess {
  stops = 0;
  starts = 0;
  stopEntered = false;
  constructor(
    name: string,
    private readonly action: ErrorAction,
    private readonly stopGate: Gate,
  ) {
    super(name);
  }
  override async onStart(): Promise<void> {
    this.starts++;
  }
  override async handle(): Promise<void> {
    throw new Error("this message ends the agent");
  }
  override async onError(): Promise<ErrorAction> {
    return this.action;
  }
  override async onStop(): Promise<void> {
    this.stops++;
    this.stopEntered = true;
    await this.stopGate.promise;
  }
}

describe("a removal while the child is ending on its own joins that end", () => {
  for (const [action, removal] of [
    [ErrorAction.ESCALATE, "despawn"],
    [ErrorAction.ESCALATE, "stop"],
    [ErrorAction.STOP, "despawn"],
    [ErrorAction.STOP, "stop"],
  ] as const) {
    it(`${removal} during the onStop of an end of its own (onError: ${action}) resolves after it, runs no second onStop, and restarts nothing`, async () => {
      const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
      const rt = await whenStarted(runtime(dyn));
      const stopGate = gate();
      const agent = await dyn.spawn(() => new Ending("a", action, stopGate), "a");
      await rt.send("a", {});
      await until(() => agent.stopEntered, "the end's onStop");
      let removed = false;
      const removing = (removal === "despawn" ? dyn.despawn("a") : dyn.stop("a")).then(() => (removed = true));
      await sleep(20);
      expect(removed).toBe(false); // waits for the onStop running
      stopGate.open();
      await removing;
      await sleep(20); // a restart, if one were coming (no backoff)
      expect(agent.stops).toBe(1);
      expect(agent.starts).toBe(1);
      expect(agent.status).toBe(action === ErrorAction.STOP ? ProcessStatus.STOPPED : ProcessStatus.CRASHED);
      expect(rt.getAgent("a")).toBeUndefined();
    });
  }
});

/** A store that refuses every write with STATE_FENCED once `fenced` is set. */
class FencingStore extends WrappedStore {
  fenced = false;
  override set(name: string, state: JsonObject): Promise<void> {
    if (this.fenced) return Promise.reject(new StateFencedError(name, 1, 2));
    return super.set(name, state);
  }
}

describe("a write refused with STATE_FENCED while the agent is parked", () => {
  it("stops it without a message to wake its loop: onStop once, STOPPED, removed by its DynamicSupervisor, never started again", async () => {
    const store = new FencingStore();
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const rt = await whenStarted(runtime(dyn, { store }));
    const agent = await dyn.spawn(() => new Lifecycle("p"), "p"); // counts its onStart and onStop calls
    store.fenced = true;
    // A checkpoint from outside any handler (a timer's): the agent's loop is parked.
    const written = await agent.checkpoint().then(
      () => "written",
      (error: unknown) => (error as StateFencedError).code,
    );
    expect(written).toBe("STATE_FENCED");
    await until(() => agent.status === ProcessStatus.STOPPED && rt.getAgent("p") === undefined, "the fenced agent's end");
    await sleep(20);
    expect(agent.stopCount).toBe(1);
    expect(agent.startCount).toBe(1);
    await expect(rt.send("p", {})).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });
});
