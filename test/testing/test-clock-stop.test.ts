/**
 * The trap issue 13 names: a handler that never returns plus a TestClock
 * made runtime.stop() hang, because the stop's drain deadline
 * (shutdownTimeoutMs) runs on the runtime's clock and nobody moved it.
 * clock.runUntil(runtime.stop()) moves it until the stop is done.
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, Runtime, silentLogger } from "../../src/index.js";
import { settle, TestClock, waitForStatus } from "../../src/entries/testing.js";
import { whenStarted } from "../support/runtimes.js";

class Parked extends AgentProcess {
  entered = false;
  override async handle(): Promise<void> {
    this.entered = true;
    await new Promise<never>(() => undefined); // parked forever, as in a scheduler nobody releases
  }
}

describe("TestClock.runUntil", () => {
  it("lets runtime.stop() finish while a handler is parked forever, after the agent's shutdownTimeoutMs of test time", async () => {
    const clock = new TestClock();
    const agent = new Parked("parked", { shutdownTimeoutMs: 2_000 });
    const runtime = await whenStarted(new Runtime({ root: agent, clock, logger: silentLogger }));
    await runtime.send("parked", {});
    for (let i = 0; i < 10 && !agent.entered; i++) await settle();
    expect(agent.entered).toBe(true);
    const startMs = clock.now();
    let stopped = false;
    const stopping = runtime.stop().then(() => (stopped = true));
    for (let i = 0; i < 20; i++) await settle();
    expect(stopped).toBe(false); // the trap: without moving the clock, the stop waits for ever
    await clock.runUntil(stopping);
    expect(stopped).toBe(true);
    expect(clock.now() - startMs).toBeGreaterThanOrEqual(2_000);
    await waitForStatus(agent, ProcessStatus.STOPPED);
  });

  it("returns what the work resolves with and rethrows what it rejects with", async () => {
    const clock = new TestClock();
    const later = new Promise<string>((resolve) => clock.setTimeout(() => resolve("fired"), 60_000));
    await expect(clock.runUntil(later)).resolves.toBe("fired");
    const failing = new Promise<never>((_, reject) => clock.setTimeout(() => reject(new Error("boom")), 10));
    await expect(clock.runUntil(failing)).rejects.toThrow("boom");
  });

  it("fires only the timers it needs: one due after the work settled stays armed", async () => {
    const clock = new TestClock();
    const fired: string[] = [];
    const first = new Promise<void>((resolve) => clock.setTimeout(() => (fired.push("first"), resolve()), 10));
    clock.setTimeout(() => fired.push("second"), 20);
    await clock.runUntil(first);
    expect(fired).toEqual(["first"]);
    expect(clock.pendingTimers).toBe(1);
  });
});
