import type { Arbitrary } from "fast-check";
import { InvalidArgumentError } from "../../errors/errors.js";
import { fc } from "../fast-check.js";
import type { Simulation } from "./types.js";

/**
 * One user operation of a scenario over a whole simulated system (a
 * transfer, an audit, a resume …), as PropEr's `statem` commands are:
 * `issue` starts it on the simulation (`sim.send`, `sim.ask`, `sim.resume`
 * …) without waiting for it; the promise it returns settles as the
 * simulation runs, and its outcome is recorded.
 */
export interface SimulationCommand {
  /** How the command prints in a counterexample: `transfer(coord-a, alice->bob, 10)`. */
  readonly label: string;
  /** Starts the operation. Must not await the simulation (that would wait for steps nobody runs), unless `exclusive`. */
  issue(sim: Simulation): Promise<unknown> | void;
  /**
   * The operation drives the simulation itself (`sim.kill()`): the runner
   * awaits it before anything else of its round is issued or run.
   * @defaultValue false
   */
  readonly exclusive?: boolean;
}

/**
 * A scenario: rounds of commands. The commands of one round are issued
 * together and run concurrently — the simulation interleaves everything
 * they set off, as PropEr's parallel branches — and the system runs until
 * it is quiescent before the next round begins (a sequential prefix is a
 * list of one-command rounds).
 */
export interface SimulationScenario {
  readonly rounds: readonly (readonly SimulationCommand[])[];
  /** How many user operations the scenario holds (the measure a counterexample shrinks). */
  readonly operations: number;
  /** `[transfer(…) | audit] ; [resume(payer)]`: rounds separated by `;`, the commands of a round by `|`. */
  toString(): string;
}

/** Options of {@link simulationScenarioArbitrary}. */
export interface SimulationScenarioOptions {
  /** Most commands in a scenario, over all its rounds. @defaultValue 8 */
  readonly maxCommands?: number;
}

/**
 * A scenario made of `rounds`, for a hand-written case or a replay.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when a command lacks a `label` or an `issue` function
 */
export function simulationScenario(rounds: readonly (readonly SimulationCommand[])[]): SimulationScenario {
  rounds.forEach((round, r) =>
    round.forEach((command, c) => {
      if (typeof command?.label !== "string" || typeof command.issue !== "function") {
        throw new InvalidArgumentError("rounds", `simulationScenario: command ${c} of round ${r} needs a string label and an issue(sim) function, got ${JSON.stringify(command)}`);
      }
    }),
  );
  const frozen = Object.freeze(rounds.map((round) => Object.freeze([...round])));
  const text = (): string => frozen.map((round) => `[${round.map((command) => command.label).join(" | ")}]`).join(" ; ");
  // fast-check prints a counterexample through toStringMethod.
  const scenario: SimulationScenario = { rounds: frozen, operations: frozen.reduce((sum, round) => sum + round.length, 0), toString: text };
  return Object.assign(scenario, { [fc.toStringMethod]: text });
}

/**
 * Scenarios built from `command`: 0 to `maxCommands` commands, split into
 * rounds at random. Shrinking removes commands, merges rounds and shrinks
 * each command, so a counterexample ends up with the fewest user operations
 * that still fail.
 *
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bound that is not a positive integer
 * @example
 * ```ts
 * const transfer = fc.record({ coordinator: fc.constantFrom("coord-a", "coord-b"), amount: fc.integer({ min: 1, max: 50 }) })
 *   .map(({ coordinator, amount }) => ({ label: `transfer(${coordinator}, ${amount})`, issue: (sim) => sim.ask(coordinator, "transfer", { from: "alice", to: "bob", amount }) }));
 * fc.assert(fc.asyncProperty(simulationScenarioArbitrary(transfer), fc.integer(), async (scenario, seed) => { ... }));
 * ```
 */
export function simulationScenarioArbitrary(command: Arbitrary<SimulationCommand>, options: SimulationScenarioOptions = {}): Arbitrary<SimulationScenario> {
  const maxCommands = positive("maxCommands", options.maxCommands ?? 8);
  // A flat list, each command saying whether its round ends after it. No minLength: fast-check
  // removes an item by shrinking the length of the list after it, never below minLength, so with a
  // minLength of 1 the last command could never be removed (a list of lists has the same problem).
  return fc.array(fc.record({ command, endsRound: fc.boolean() }), { maxLength: maxCommands }).map((drafts) => {
    const rounds: SimulationCommand[][] = [[]];
    for (const { command: next, endsRound } of drafts) {
      (rounds.at(-1) as SimulationCommand[]).push(next);
      if (endsRound) rounds.push([]);
    }
    return simulationScenario(rounds.filter((round) => round.length > 0));
  });
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(name, `simulationScenarioArbitrary: ${name} must be a positive integer, got ${String(value)}`);
  return value;
}
