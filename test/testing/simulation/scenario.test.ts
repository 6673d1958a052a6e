/**
 * The command driver's parts: scenarios built by hand and drawn by
 * fast-check, the runner's rounds, outcomes and final check, and
 * sequenceChooser.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, type Message } from "../../../src/index.js";
import { runSimulationScenario, sequenceChooser, simulationScenario, simulationScenarioArbitrary, SimulationFailure, type SimulationCommand } from "../../../src/entries/testing.js";

/** Answers `get` with its count; `add` adds to it. */
class Counter extends AgentProcess<{ count: number }> {
  override state = { count: 0 };
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "get") return this.reply({ count: this.state.count });
    this.state.count += Number(message.payload.by ?? 1);
  }
}

const root = () => [new Counter("a"), new Counter("b")];
const add = (agent: string, by = 1): SimulationCommand => ({ label: `add(${agent}, ${by})`, issue: (sim) => sim.send(agent, "add", { by }) });
const get = (agent: string): SimulationCommand => ({ label: `get(${agent})`, issue: (sim) => sim.ask(agent, "get") });

describe("simulationScenario", () => {
  it("counts the operations and prints rounds with | and ;", () => {
    const scenario = simulationScenario([[add("a"), add("b")], [get("a")]]);
    expect(scenario.operations).toBe(3);
    expect(scenario.toString()).toBe("[add(a, 1) | add(b, 1)] ; [get(a)]");
    expect(fc.stringify(scenario)).toBe("[add(a, 1) | add(b, 1)] ; [get(a)]");
  });

  it("refuses a command without a label or an issue function, naming where it is", () => {
    expect(() => simulationScenario([[add("a")], [{ label: "x" } as unknown as SimulationCommand]])).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/command 0 of round 1 needs a string label and an issue\(sim\) function/) as unknown }),
    );
  });
});

describe("simulationScenarioArbitrary", () => {
  it("draws at most maxCommands commands, in non-empty rounds", () => {
    fc.assert(
      fc.property(simulationScenarioArbitrary(fc.constantFrom(add("a"), add("b")), { maxCommands: 5 }), (scenario) => {
        expect(scenario.operations).toBeLessThanOrEqual(5);
        expect(scenario.rounds.every((round) => round.length > 0)).toBe(true);
      }),
    );
  });

  it("shrinks a failing scenario to the one command it needs, wherever it was", () => {
    const details = fc.check(
      fc.property(simulationScenarioArbitrary(fc.constantFrom(add("a"), add("b"), get("a"))), (scenario) => !scenario.rounds.flat().some((c) => c.label === "get(a)")),
      { seed: 3 },
    );
    expect(details.failed).toBe(true);
    expect(String((details.counterexample as [unknown])[0])).toBe("[get(a)]");
  });

  it("refuses a maxCommands that is not a positive integer", () => {
    expect(() => simulationScenarioArbitrary(fc.constant(add("a")), { maxCommands: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxCommands must be a positive integer, got 0/) as unknown }));
  });
});

describe("runSimulationScenario", () => {
  it("runs each round to quiescence before the next, and records every command's outcome", async () => {
    const run = await runSimulationScenario(simulationScenario([[add("a", 2), add("b", 3)], [get("a"), get("b")]]), {
      root,
      seed: 5,
      check: (view) => {
        expect([view.agent<Counter>("a").state.count, view.agent<Counter>("b").state.count]).toEqual([2, 3]);
      },
    });
    expect(run.outcomes.map((o) => [o.label, o.round, o.result])).toEqual([
      ["add(a, 2)", 0, "done"],
      ["add(b, 3)", 0, "done"],
      ["get(a)", 1, "done"],
      ["get(b)", 1, "done"],
    ]);
    expect((run.outcomes[2]?.value as Message).payload).toEqual({ count: 2 });
    // the second round's operations are issued only after the first round's deliveries
    const kinds = run.trace.map((step) => `${step.kind} ${step.key}`);
    expect(kinds.indexOf("op op:ask:a:get")).toBeGreaterThan(kinds.findIndex((k) => k.startsWith("deliver b<-_runtime:add")));
  });

  it("a failing check rejects with SIMULATION_INVARIANT naming the scenario and carrying the trace; replaying that trace fails the same way", async () => {
    const scenario = simulationScenario([[add("a")]]);
    const options = { root, check: () => "a is never allowed to count" };
    const failure = await runSimulationScenario(scenario, { ...options, seed: 1 }).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(SimulationFailure);
    expect(failure).toMatchObject({ code: "SIMULATION_INVARIANT", message: expect.stringMatching(/^scenario \[add\(a, 1\)\]: a is never allowed to count\n\ntrace/) as unknown });
    const trace = (failure as SimulationFailure).trace;
    expect(trace.some((step) => step.key === "op:send:a:add")).toBe(true);
    await expect(runSimulationScenario(scenario, { ...options, replay: trace })).rejects.toMatchObject({ code: "SIMULATION_INVARIANT", trace: expect.arrayContaining(trace.map((s) => expect.objectContaining({ key: s.key }) as unknown)) as unknown });
  });

  it("an engine failure is given the scenario's name", async () => {
    const scenario = simulationScenario([[add("a")]]);
    const failure = await runSimulationScenario(scenario, { root, seed: 1, invariants: [(view) => (view.agent<Counter>("a").state.count > 0 ? "counted" : undefined)] }).then(() => undefined, (error: unknown) => error);
    expect(failure).toMatchObject({ code: "SIMULATION_INVARIANT", message: expect.stringMatching(/^scenario \[add\(a, 1\)\]: invariant #0 failed: counted/) as unknown });
  });

  it("refuses a malformed scenario, settle or check before the simulation starts", async () => {
    await expect(runSimulationScenario({} as never, { root })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/scenario must come from simulationScenario/) as unknown });
    const scenario = simulationScenario([]);
    await expect(runSimulationScenario(scenario, { root, settle: "later" as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/settle must be "run" or "idle", got "later"/) as unknown });
    await expect(runSimulationScenario(scenario, { root, check: 3 as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/check must be a function/) as unknown });
  });
});

describe("sequenceChooser", () => {
  it("takes each number modulo the ready count, then the first ready choice; a fault when the number modulo 1,000 is in the top share", () => {
    const chooser = sequenceChooser([5, 1, 999, 0]);
    const ready = (n: number) => Array.from({ length: n }, (_, i) => ({ kind: "deliver" as const, key: `k${i}`, thread: `t${i}` }));
    expect(chooser.choose(ready(3), 0)).toBe(2); // 5 % 3
    expect(chooser.choose(ready(2), 1)).toBe(1);
    expect(chooser.fault?.(ready(1)[0] as never, "crash", 0.01, 2)).toBe(true); // 999 >= 990
    expect(chooser.fault?.(ready(1)[0] as never, "crash", 0.5, 3)).toBe(false); // 0: no fault
    expect(chooser.choose(ready(4), 4)).toBe(0); // used up
  });

  it("refuses anything but non-negative integers", () => {
    expect(() => sequenceChooser([1, -1])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => sequenceChooser("12" as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/choices must be an array of non-negative integers/) as unknown }));
  });
});
