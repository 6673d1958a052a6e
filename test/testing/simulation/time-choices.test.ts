/**
 * Time as a choice (issue 27): with `time.races`, virtual time may jump to
 * the earliest timer while other steps are ready, so an ask's timeout can
 * fire before the reply that would have beaten it. A planted timeout race —
 * a buyer that takes a timeout for "not reserved" and reserves elsewhere —
 * is out of reach without it and found on 20 of 20 seeds with it;
 * `stepLatencyMs` makes each step take virtual time.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess } from "../../../src/process/agent-process.js";
import type { Message } from "../../../src/message/message.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { runSimulationScenario } from "../../../src/testing/simulation/run-scenario.js";
import { simulationScenarioArbitrary, type SimulationCommand } from "../../../src/testing/simulation/scenario.js";
import { scheduleArbitrary } from "../../../src/testing/simulation/schedule-arbitrary.js";
import { sequenceChooser } from "../../../src/testing/simulation/sequence-chooser.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { SimulationOptions, SimulationView } from "../../../src/testing/simulation/types.js";
import { whenStarted } from "../../support/runtimes.js";

/** Holds stock; a `reserve` takes one unit for the order. */
class Warehouse extends AgentProcess<{ reserved: string[] }> {
  override state = { reserved: [] as string[] };
  override async handle(message: Message): Promise<Message> {
    this.state.reserved.push(String(message.payload.order));
    return this.reply({ ok: true });
  }
}

/** The planted bug: a timeout is taken for "not reserved", and the backup warehouse reserves the same order again. */
class Buyer extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    const order = String(message.payload.order);
    try {
      await this.ask("main", { order }, { type: "reserve", timeoutMs: 1_000 });
    } catch {
      await this.ask("backup", { order }, { type: "reserve", timeoutMs: 1_000 }).catch(() => undefined);
    }
  }
}

const root = (): Supervisor => new Supervisor("shop", { children: [new Warehouse("main"), new Warehouse("backup"), new Buyer("buyer")] });

function reservations(view: SimulationView, order: string): number {
  return ["main", "backup"].map((w) => view.agent<Warehouse>(w).state.reserved.filter((o) => o === order).length).reduce((a, b) => a + b, 0);
}

const buy: fc.Arbitrary<SimulationCommand> = fc.integer({ min: 1, max: 9 }).map((n) => ({ label: `buy(o${n})`, issue: (sim) => sim.send("buyer", "buy", { order: `o${n}` }) }));

function property(options: Pick<SimulationOptions, "time">) {
  return fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(buy, { maxCommands: 3 }), async (choices, scenario) => {
    await runSimulationScenario(scenario, {
      root,
      chooser: sequenceChooser(choices),
      ...options,
      check: (view, outcomes) => {
        for (let n = 1; n <= 9; n++) {
          const bought = outcomes.filter((o) => o.label === `buy(o${n})`).length;
          if (reservations(view, `o${n}`) > bought) return `order o${n} reserved ${reservations(view, `o${n}`)} times, bought ${bought}`;
        }
      },
    });
  });
}

describe("time as a choice", () => {
  it("without it, the reply always beats the timeout: the race is out of reach in 300 runs", { timeout: 60_000 }, async () => {
    await fc.assert(property({}), { seed: 1, numRuns: 300 });
  });

  it("with time.races, the planted timeout race is found on 20 of 20 seeds, through a `time` step", { timeout: 120_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const details = await fc.check(property({ time: { races: 2 } }), { seed, numRuns: 200 });
      expect(details.failed, `seed ${seed}`).toBe(true);
      const failure = details.errorInstance as SimulationFailure;
      expect(failure.message).toMatch(/reserved \d+ times, bought/);
      expect(failure.trace.some((s) => s.kind === "time" && s.key === "time")).toBe(true);
    }
  });

  it("a `time` step replays like any other", async () => {
    let failure: SimulationFailure | undefined;
    for (let seed = 0; failure === undefined && seed < 500; seed++) {
      const sim = await whenStarted(simulate({ root, seed, time: { races: 1 } }));
      void sim.send("buyer", "buy", { order: "o1" });
      await sim.run();
      const twice = reservations(sim.view, "o1") > 1;
      await sim.stop();
      if (twice) failure = new SimulationFailure("SIMULATION_INVARIANT", "twice", [...sim.trace]);
    }
    expect(failure).toBeDefined();
    const again = await whenStarted(replay(JSON.parse(JSON.stringify((failure as SimulationFailure).trace)) as SimulationFailure["trace"], { root, time: { races: 1 } }));
    void again.send("buyer", "buy", { order: "o1" });
    await again.run();
    expect(reservations(again.view, "o1")).toBe(2);
    await again.stop();
    expect(again.trace.map((s) => s.key)).toEqual((failure as SimulationFailure).trace.map((s) => s.key));
  });

  it("time moves on at most `races` times while others are ready (a timer due at the same time may fire then too)", async () => {
    for (let seed = 0; seed < 50; seed++) {
      const sim = await whenStarted(simulate({ root, seed, time: { races: 1 } }));
      for (let n = 1; n <= 4; n++) void sim.send("buyer", "buy", { order: `o${n}` });
      await sim.run();
      const moves = new Set(sim.trace.filter((s) => s.kind === "time").map((s) => s.detail?.split(",")[0]));
      expect(moves.size).toBeLessThanOrEqual(1);
      await sim.stop();
    }
  });

  it("stepLatencyMs: each step takes virtual time, and a timer past due is offered until it fires", async () => {
    const sim = await whenStarted(simulate({ root, seed: 4, startMs: 0, time: { stepLatencyMs: 300 } }));
    const t0 = sim.view.now;
    void sim.send("buyer", "buy", { order: "o1" });
    await sim.idle();
    const steps = sim.trace.length;
    expect(sim.view.now).toBeGreaterThanOrEqual(t0 + 300 * 3);
    expect(steps).toBeGreaterThan(3);
    await sim.stop();
    expect(() => simulate({ root, time: { races: -1 } })).toThrow(/time.races must be a non-negative integer/);
    expect(() => simulate({ root, time: { stepLatencyMs: Number.NaN } })).toThrow(/time.stepLatencyMs must be a non-negative number/);
  });
});
