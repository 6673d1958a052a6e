/**
 * exhaust(): every schedule of a small system within a bound, by a
 * depth-first search over the simulation's choices (issue 13, item 5).
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, type Message } from "../../../src/index.js";
import { exhaust, type Simulation } from "../../../src/entries/testing.js";
import { lostUpdate } from "../../../examples/simulation/lost-update.js";
import { moneyInFlight } from "../../../examples/simulation/money-in-flight.js";
import { eachWayTransfers } from "./fixtures.js";

/** Takes its messages and does nothing else: no reply, no write, so deliveries are the only choices. */
class Quiet extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

const twoAgents = () => [new Quiet("a"), new Quiet("b")];

/** Two messages for a, one for b, all sent from outside before the simulation runs. */
async function threeMessages(sim: Simulation): Promise<void> {
  void sim.send("a", "m1");
  void sim.send("a", "m2");
  void sim.send("b", "m3");
  await sim.run();
}

describe("exhaust without reduction (reduce: false): every schedule", () => {
  it("covers exactly the 3 schedules of a 2-agent, 3-message system", async () => {
    // By hand: a must take m1 before m2 (FIFO from one sender), b takes m3; the simulation only
    // chooses which agent goes next. A schedule is where b's delivery falls among the three:
    // (m3 m1 m2), (m1 m3 m2), (m1 m2 m3) — C(3, 1) = 3. Nothing else is a choice: the agents
    // neither reply nor write state, and the start is not explored (exploreStart: false).
    const result = await exhaust({ root: twoAgents, maxSteps: 100, reduce: false, scenario: threeMessages });
    expect(result).toEqual({ schedules: 3, pruned: 0, reduced: false, bounded: false, truncated: 0, complete: true, deepest: 5 });
  });

  it("with exploreStart, also covers the 2 orders of the agents' start receipts: 2 × 3 = 6", async () => {
    // The start writes one agent.start audit receipt per agent; both are ready at once, so the
    // log can take a's first or b's first. Each of those 2 starts is followed by the 3 schedules above.
    const result = await exhaust({ root: twoAgents, maxSteps: 100, exploreStart: true, reduce: false, scenario: threeMessages });
    expect(result).toEqual({ schedules: 6, pruned: 0, reduced: false, bounded: false, truncated: 0, complete: true, deepest: 7 });
  });

  it("reorders nothing FIFO forbids: three messages to one agent have exactly 1 schedule", async () => {
    const result = await exhaust({
      root: twoAgents,
      maxSteps: 100,
      scenario: async (sim) => {
        for (const type of ["m1", "m2", "m3"]) void sim.send("a", type);
        await sim.run();
      },
    });
    expect(result.schedules).toBe(1);
    expect(result.complete).toBe(true);
  });

  it("cuts schedules at maxSteps, counts them as truncated and reports the search incomplete", async () => {
    // 7 steps: 2 start receipts, 3 sends, then 2 deliveries; the third delivery would be step 8.
    // Within that bound only the choice among the first two deliveries is left: b's, or a's then (a's or b's).
    const result = await exhaust({ root: twoAgents, maxSteps: 7, reduce: false, scenario: threeMessages });
    expect(result).toEqual({ schedules: 3, pruned: 0, reduced: false, bounded: false, truncated: 3, complete: false, deepest: 2 });
  });

  it("stops at maxSchedules and says the search is incomplete", async () => {
    const result = await exhaust({ root: twoAgents, maxSteps: 100, maxSchedules: 2, reduce: false, scenario: threeMessages });
    expect(result).toMatchObject({ schedules: 2, complete: false });
  });

  it("finds the auditor that sees money in flight, names the schedule, and proves the fixed auditor in every schedule", { timeout: 60_000 }, async () => {
    const scenario = async (sim: Simulation): Promise<void> => {
      void sim.ask("coordinator", "transfer", { from: "alice", to: "bob", amount: 10 });
      void sim.ask("auditor", "audit");
      await sim.run();
      const problem = moneyInFlight.check(sim.view);
      if (problem !== undefined) throw new Error(problem);
    };
    const buggy = await exhaust({ root: moneyInFlight.root(false), maxSteps: 200, scenario });
    expect(buggy.complete).toBe(false);
    expect(String((buggy.failure?.error as Error | undefined)?.message)).toMatch(/false alarm\(s\): it summed 190 while the bank held 200/);
    expect(buggy.failure?.choices.some((choice) => choice > 0)).toBe(true); // not the first schedule: a real interleaving
    const fixed = await exhaust({ root: moneyInFlight.root(true), maxSteps: 200, scenario });
    expect(fixed).toMatchObject({ complete: true, truncated: 0 });
    expect(fixed.failure).toBeUndefined();
    expect(fixed.schedules).toBeGreaterThan(1);
  });

  it("refuses a bound that is not a positive integer, and a missing scenario, before running anything", async () => {
    await expect(exhaust({ root: twoAgents, maxSteps: 0, scenario: threeMessages })).rejects.toMatchObject({ name: "InvalidArgumentError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxSteps must be a positive integer.*got 0/) as unknown });
    await expect(exhaust({ root: twoAgents, maxSteps: 10, maxSchedules: 1.5, scenario: threeMessages })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxSchedules must be a positive integer, got 1\.5/) as unknown });
    await expect(exhaust({ root: twoAgents, maxSteps: 10 } as unknown as Parameters<typeof exhaust>[0])).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/scenario must be a function/) as unknown });
  });
});

describe("exhaust with bounds (CHESS's preemption bound, delay bounding)", () => {
  it("maxPreemptions: 0 keeps the schedules where no agent is switched away from while it could go on: 2 of the 3", async () => {
    // (m3 m1 m2) and (m1 m2 m3) switch only when an agent has nothing left; (m1 m3 m2) leaves a with m2 ready: one preemption.
    const none = await exhaust({ root: twoAgents, maxSteps: 100, maxPreemptions: 0, scenario: threeMessages });
    expect(none).toMatchObject({ schedules: 2, complete: true, bounded: true, reduced: false });
    const one = await exhaust({ root: twoAgents, maxSteps: 100, maxPreemptions: 1, scenario: threeMessages });
    expect(one).toMatchObject({ schedules: 3, complete: true, bounded: true });
  });

  it("maxDelays: 0 runs the default schedule only; each delay more reaches more, up to the full search", async () => {
    const counts: number[] = [];
    for (const maxDelays of [0, 1, 2, 3]) counts.push((await exhaust({ root: twoAgents, maxSteps: 100, maxDelays, scenario: threeMessages })).schedules);
    expect(counts[0]).toBe(1);
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1] as number);
    expect(counts.at(-1)).toBe(3);
  });

  it("finds the each-way lost update with one preemption, and searches the fixed system completely within that bound", { timeout: 120_000 }, async () => {
    const scenario = eachWayTransfers;
    const buggy = await exhaust({ root: lostUpdate.root(false), maxSteps: 300, maxPreemptions: 1, scenario });
    expect(String((buggy.failure?.error as Error | undefined)?.message)).toMatch(/money created or lost/);
    const fixed = await exhaust({ root: lostUpdate.root(true), maxSteps: 300, maxPreemptions: 1, scenario });
    expect(fixed).toMatchObject({ complete: true, bounded: true, truncated: 0 });
    expect(fixed.failure).toBeUndefined();
    expect(buggy.schedules).toBeLessThanOrEqual(10);
    expect(fixed.schedules).toBeLessThan(48_840 / 10); // the full search of the fixed system runs 48,840 schedules
  });

  it("refuses a bound that is not a non-negative integer", async () => {
    await expect(exhaust({ root: twoAgents, maxSteps: 10, maxPreemptions: -1, scenario: threeMessages })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxPreemptions must be a non-negative integer.*got -1/) as unknown });
    await expect(exhaust({ root: twoAgents, maxSteps: 10, maxDelays: 0.5, scenario: threeMessages })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxDelays must be a non-negative integer.*got 0\.5/) as unknown });
  });
});
