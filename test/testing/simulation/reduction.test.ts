/**
 * Schedule reduction in exhaust (issue 27, item 1): sleep sets over the
 * footprints the engine records. The reduced search reaches every distinct
 * final state the full search reaches (a property over small random
 * systems); the each-way lost update is found, and the fixed system is
 * searched completely, within the targets.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, type Message } from "../../../src/index.js";
import { exhaust, type Simulation } from "../../../src/entries/testing.js";
import { lostUpdate } from "../../../examples/simulation/lost-update.js";
import { eachWayTransfers } from "./fixtures.js";

/** What an agent of a random system does with a message: sends, asks (only to agents after it: no cycle of asks), checkpoints. */
type Action = { readonly kind: "send" | "ask"; readonly to: number; readonly tag: string } | { readonly kind: "checkpoint" };

/** An agent following its program for each message from outside (depth 0), logging what it got. */
class Scripted extends AgentProcess<{ log: string[] }> {
  override state = { log: [] as string[] };
  constructor(
    name: string,
    private readonly program: readonly Action[],
  ) {
    super(name);
  }

  override async handle(message: Message): Promise<Message | void> {
    const depth = Number(message.payload.depth ?? 0);
    this.state.log.push(`${message.sender}:${String(message.payload.tag)}`);
    if (depth < 1) {
      for (const action of this.program) {
        if (action.kind === "checkpoint") await this.checkpoint();
        else if (action.kind === "send") await this.send(`n${action.to}`, { tag: action.tag, depth: depth + 1 }, { type: "m" });
        else await this.ask(`n${action.to}`, { tag: action.tag, depth: depth + 1 }, { type: "q" });
      }
    }
    if (message.type === "q") return this.reply({ ok: true });
  }
}

const systemArbitrary = fc.integer({ min: 2, max: 3 }).chain((agents) =>
  fc.record({
    agents: fc.constant(agents),
    programs: fc.array(
      fc.array(
        fc.oneof(
          fc.record({ kind: fc.constantFrom("send" as const), to: fc.nat({ max: agents - 1 }), tag: fc.constantFrom("x", "y") }),
          fc.record({ kind: fc.constantFrom("ask" as const), to: fc.nat({ max: agents - 1 }), tag: fc.constantFrom("x", "y") }),
          fc.constant({ kind: "checkpoint" as const }),
        ),
        { minLength: 1, maxLength: 2 },
      ),
      { minLength: agents, maxLength: agents },
    ),
    starts: fc.tuple(fc.nat({ max: agents - 1 }), fc.nat({ max: agents - 1 })).map(([a, b]) => [a, (a + 1 + (b % (agents - 1))) % agents]),
    
  }),
);

type System = { agents: number; programs: readonly (readonly Action[])[]; starts: readonly number[] };

/** Every distinct final state (logs, stored states, audit) of the system, by a full or a reduced search. */
async function finalStates(system: System, reduce: boolean): Promise<{ states: Set<string>; complete: boolean; schedules: number }> {
  // Asks go only to agents after the asker, so no cycle of asks can deadlock.
  const programs = system.programs.map((program, i) => program.map((a) => (a.kind === "ask" && a.to <= i ? { ...a, kind: "send" as const } : a)));
  const names = programs.map((_, i) => `n${i}`);
  const states = new Set<string>();
  const result = await exhaust({
    root: () => programs.map((program, i) => new Scripted(`n${i}`, program)),
    maxSteps: 400,
    maxSchedules: reduce ? 2_000 : 600,
    reduce,
    scenario: async (sim: Simulation) => {
      system.starts.forEach((to, i) => void sim.send(`n${to}`, "go", { tag: `s${i}` }));
      await sim.run();
      states.add(JSON.stringify({ logs: names.map((n) => sim.view.agent<Scripted>(n).state.log), stored: names.map((n) => sim.view.stored(n) ?? null), audit: sim.view.audit.map((e) => `${e.event}:${e.agent}`) }));
    },
  });
  expect(result.failure).toBeUndefined();
  return { states, complete: result.complete, schedules: result.schedules };
}

describe("exhaust with reduction (the default)", () => {
  it("runs one schedule where every order is equivalent: 2 agents, 3 messages", async () => {
    const result = await exhaust({
      root: () => [new Scripted("a", []), new Scripted("b", [])],
      maxSteps: 100,
      scenario: async (sim) => {
        void sim.send("a", "m1");
        void sim.send("a", "m2");
        void sim.send("b", "m3");
        await sim.run();
      },
    });
    expect(result).toMatchObject({ schedules: 1, reduced: true, complete: true, truncated: 0 });
  });

  it("reaches every distinct final state the full search reaches, on small random systems", { timeout: 300_000 }, async () => {
    let compared = 0;
    let interesting = 0;
    const timings: string[] = [];
    await fc.assert(
      fc.asyncProperty(systemArbitrary, async (system) => {
        const t0 = performance.now();
        const full = await finalStates(system, false);
        if (!full.complete) return; // too big to compare
        const reduced = await finalStates(system, true);
        expect(reduced.complete).toBe(true);
        expect([...reduced.states].sort()).toEqual([...full.states].sort());
        expect(reduced.schedules).toBeLessThanOrEqual(full.schedules);
        compared++;
        if (full.states.size > 1) interesting++;
        timings.push(`${full.schedules}/${reduced.schedules} in ${Math.round(performance.now() - t0)} ms`);
      }),
      { numRuns: 60, seed: 27 },
    );
    expect(compared).toBeGreaterThanOrEqual(40);
    expect(interesting, `systems with more than one final state (full/reduced schedules: ${timings.join(", ")})`).toBeGreaterThanOrEqual(10);
  });

  describe("the each-way lost update (two transfers in opposite directions between two coordinators)", () => {
    const scenario = eachWayTransfers;

    it("is found within the first few schedules (the time it takes is measured in npm run bench -- simulation)", { timeout: 60_000 }, async () => {
      const result = await exhaust({ root: lostUpdate.root(false), maxSteps: 300, scenario });
      expect(String((result.failure?.error as Error | undefined)?.message)).toMatch(/money created or lost/);
      expect(result.schedules).toBeLessThanOrEqual(10);
    });

    it("the fixed system is searched completely, in far fewer schedules than without reduction", { timeout: 120_000 }, async () => {
      const reduced = await exhaust({ root: lostUpdate.root(true), maxSteps: 300, scenario });
      expect(reduced).toMatchObject({ complete: true, reduced: true, truncated: 0 });
      expect(reduced.failure).toBeUndefined();
      expect(reduced.schedules + reduced.pruned).toBeLessThanOrEqual(500);
      const full = await exhaust({ root: lostUpdate.root(true), maxSteps: 300, scenario, reduce: false, maxSchedules: 20 * (reduced.schedules + reduced.pruned) });
      expect(full.complete).toBe(false); // the full search needs more than 20 times as many runs
    });
  });
});
