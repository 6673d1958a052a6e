import { describe, expect, it } from "vitest";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { alone, Asker, bank, failureOf, Looper, Sleeper } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

const askers = (): Supervisor => new Supervisor("root", { children: [new Asker("a", "b"), new Asker("b", "a")] });

describe("quiescence, deadlock and external awaits", () => {
  it("a cycle of asks is a deadlock, reported with the waiting chain before any ask times out", async () => {
    const sim = await whenStarted(simulate({ root: askers, seed: 1 }));
    void sim.send("a", "start", {});
    const started = sim.view.now;
    const failure = await failureOf(sim.run());
    expect(failure?.code).toBe("SIMULATION_DEADLOCK");
    expect(failure?.message).toMatch(/deadlock: nothing is ready and agents wait on each other: (a asks b \(question\) -> b asks a \(question\)|b asks a \(question\) -> a asks b \(question\))/);
    expect(failure?.trace.at(-1)?.kind).toBe("deliver");
    expect(sim.view.now).toBe(started);
    await sim.stop(); // a failed simulation has ended: stop() resolves at once
  });

  it("idle() stops when nothing is ready, without moving virtual time to the pending timers", async () => {
    const sim = await whenStarted(simulate({ root: () => alone(new Sleeper("idle-timer")), seed: 2 }));
    const started = sim.view.now;
    const suspended = sim.suspend("idle-timer", "hold", { expiresInMs: 60_000 });
    await sim.idle();
    await suspended;
    expect(sim.view.status("idle-timer")).toBe("SUSPENDED");
    expect(sim.view.now).toBe(started);
    await sim.run(); // the pause's deadline fires on virtual time: denied by "expiry"
    expect(sim.view.status("idle-timer")).toBe("RUNNING");
    expect(sim.view.now - started).toBeGreaterThanOrEqual(60_000);
    expect(sim.view.audit.map((e) => e.event)).toContain("agent.deny");
    await sim.stop();
  });

  it("a handler awaiting a promise the simulation does not control is reported in the trace, and waited for", async () => {
    const sim = await whenStarted(simulate({ root: () => alone(new Sleeper("sleeper")), seed: 3 }));
    void sim.send("sleeper", "nap", {});
    await sim.run();
    const reported = sim.trace.filter((s) => s.kind === "external-await");
    expect(reported).toEqual([expect.objectContaining({ agent: "sleeper", type: "nap", key: "sleeper:external#nap" }) as unknown]);
    expect(sim.view.agent<Sleeper>("sleeper").done).toBe(1);
    await sim.stop();
  });

  it('with externalAwaits: "fail" such a handler fails the run with SIMULATION_EXTERNAL_AWAIT', async () => {
    const sim = await whenStarted(simulate({ root: () => alone(new Sleeper("sleeper")), seed: 3, externalAwaits: "fail" }));
    void sim.send("sleeper", "nap", {});
    const failure = await failureOf(sim.run());
    expect(failure?.code).toBe("SIMULATION_EXTERNAL_AWAIT");
    expect(failure?.message).toContain("'sleeper' handling nap awaits a promise the simulation does not control");
  });

  it("a run that never becomes quiescent fails with SIMULATION_STEP_LIMIT", async () => {
    const sim = await whenStarted(simulate({ root: () => alone(new Looper("looper")), seed: 4, maxSteps: 50 }));
    void sim.send("looper", "go", {});
    const failure = await failureOf(sim.run());
    expect(failure?.code).toBe("SIMULATION_STEP_LIMIT");
    expect(failure?.trace).toHaveLength(50);
  });

  it("a run that becomes quiescent after exactly maxSteps steps is not cut; one step fewer is", async () => {
    const transfer = async (maxSteps: number): Promise<SimulationFailure | undefined> => {
      const sim = await whenStarted(simulate({ root: bank, seed: 6, maxSteps }));
      void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
      const failure = await failureOf(sim.run());
      await sim.stop().catch(() => undefined);
      return failure;
    };
    const free = await whenStarted(simulate({ root: bank, seed: 6, maxSteps: 10_000 }));
    void free.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
    await free.run();
    const needed = free.trace.length;
    await free.stop();
    expect(await transfer(needed)).toBeUndefined();
    expect((await transfer(needed - 1))?.code).toBe("SIMULATION_STEP_LIMIT");
  });

  it("stop() with asks still waiting finishes: their timeouts and the shutdown run on virtual time", async () => {
    const sim = await whenStarted(simulate({ root: askers, seed: 5, maxSteps: 100 }));
    const answer = sim.ask("a", "question", {}, { timeoutMs: 1_000 }).then(
      () => "answered",
      (error: { code: string }) => error.code,
    );
    await sim.idle();
    await sim.stop();
    expect(await answer).toBe("RUNTIME_STOPPED");
  });
});

describe("one simulation at a time", () => {
  it("a second simulation cannot start while one runs (SIMULATION_BUSY); it can once the first stopped", async () => {
    const first = await whenStarted(simulate({ root: bank, seed: 1 }));
    const second = simulate({ root: bank, seed: 2 });
    await expect(second.start()).rejects.toMatchObject({ code: "SIMULATION_BUSY", name: "SimulationBusyError" });
    await first.stop();
    const third = await whenStarted(simulate({ root: bank, seed: 3 }));
    await third.stop();
  });

  it("operations before start() or after stop() are refused with SIMULATION_NOT_RUNNING", async () => {
    const sim = simulate({ root: bank, seed: 1 });
    await expect(sim.send("ledger", "balance")).rejects.toMatchObject({ code: "SIMULATION_NOT_RUNNING", name: "SimulationStateError" });
    await sim.start();
    await sim.stop();
    await expect(sim.run()).rejects.toMatchObject({ code: "SIMULATION_NOT_RUNNING" });
  });

  it("bad options are refused with INVALID_ARGUMENT before anything runs", () => {
    expect(() => simulate({ root: bank, seed: Number.NaN })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("seed must be a finite number") as unknown }));
    expect(() => simulate({ root: bank, faults: { kills: 2 } })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("faults.kills must be a probability") as unknown }));
    expect(() => simulate({ root: "bank" } as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
