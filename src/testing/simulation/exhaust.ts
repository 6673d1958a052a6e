import { CivitasError } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { simulate } from "./simulate.js";
import { SleepSetSearch } from "./sleep-set-search.js";
import type { Chooser, Simulation, SimulationChoice, SimulationFaultKind, SimulationOptions } from "./types.js";

/** Options of {@link exhaust}: those of `simulate` (without a seed or chooser: every choice is explored), and the scenario to explore. */
export interface ExhaustOptions extends Omit<SimulationOptions, "seed" | "chooser" | "maxSteps"> {
  /**
   * The bound: a schedule is cut after this many steps. A schedule that
   * would run longer is counted (in `schedules` and `truncated`) and its
   * steps beyond the bound are not explored.
   */
  readonly maxSteps: number;
  /** Issues the user operations on a started simulation and runs it (`await sim.run()`); called once per schedule. */
  readonly scenario: (sim: Simulation) => Promise<void>;
  /** Stops exploring after this many schedules (the result then says `complete: false`). @defaultValue 100_000 */
  readonly maxSchedules?: number;
  /**
   * Whether to explore the choices made while the system starts (the order
   * in which the agents' start receipts and restored states are written),
   * too. Off, the start takes the first ready choice each time and the
   * search begins with the scenario: n agents would otherwise multiply the
   * count by up to n! orders that rarely matter. @defaultValue false
   */
  readonly exploreStart?: boolean;
  /**
   * Schedule reduction: run one schedule of each class of equivalent ones
   * (schedules that differ only in the order of independent steps — steps
   * that touch nothing in common, as the engine records), with sleep sets.
   * Off where `faults`, `time` or a bound are given (the full search runs then).
   * @defaultValue true
   */
  readonly reduce?: boolean;
  /**
   * Preemption bound (CHESS): explore only schedules that switch away from
   * an agent that could still go on at most this many times. Most
   * concurrency bugs need one or two preemptions; the count of schedules
   * then grows polynomially instead of exponentially.
   */
  readonly maxPreemptions?: number;
  /**
   * Delay bound (Emmi, Qadeer and Rakamarić): the search's default is the
   * first ready choice; taking the *i*-th instead costs *i* delays, and
   * only schedules of at most this many delays in all are explored.
   */
  readonly maxDelays?: number;
}

/** What {@link exhaust} covered. */
export interface ExhaustResult {
  /** How many distinct schedules (sequences of choices) were run to their end or to the bound. */
  readonly schedules: number;
  /** How many schedules were cut early by the reduction: every step ready there would only reorder independent steps of a schedule explored. */
  readonly pruned: number;
  /** Whether the reduction was on (see {@link ExhaustOptions.reduce}). */
  readonly reduced: boolean;
  /** Whether a preemption or delay bound limited the search: `complete` then means every schedule within the bound ran. */
  readonly bounded: boolean;
  /** How many of them were cut at `maxSteps`. */
  readonly truncated: number;
  /** Whether every schedule within the bound was run (none cut, `maxSchedules` not reached, no failure). */
  readonly complete: boolean;
  /** The most choices one schedule made. */
  readonly deepest: number;
  /** The first schedule that failed (a `SimulationFailure`, or what the scenario threw), and the choices that lead to it. */
  readonly failure?: { readonly error: unknown; readonly choices: readonly number[] };
}

/** A choice point of one schedule: what was chosen, among which options (those the bounds allow, in order). */
interface Decision {
  readonly chosen: number;
  readonly allowed: readonly number[];
}

/** The preemption and delay budgets of a bounded search. */
interface Bounds {
  readonly preemptions?: number;
  readonly delays?: number;
}

/**
 * Runs `scenario` under every schedule the simulation can take within
 * `maxSteps` steps (Concuerror's idea, bounded): a depth-first search over
 * the sequence of choices. Each run follows a prefix of choices and takes
 * the first ready option after it; the next run changes the deepest choice
 * that still has an untried option. Where `faults` give a kind a
 * probability above 0, "fault or not" is one more two-way choice, so every
 * placement of a fault is explored too.
 *
 * The scenario must be deterministic given the choices (the simulation's
 * ids, time and store are): a run whose choice points differ from the
 * previous run's along the shared prefix rejects with `SIMULATION_DIVERGED`.
 *
 * @throws (rejects) {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad bound or a missing scenario, before any run
 * @example
 * ```ts
 * const result = await exhaust({ root: () => [new Counter("a"), new Counter("b")], maxSteps: 20, scenario: async (sim) => {
 *   void sim.send("a", "inc"); void sim.send("b", "inc");
 *   await sim.run();
 * }});
 * result.schedules; // 2: a first, or b first
 * ```
 */
export async function exhaust(options: ExhaustOptions): Promise<ExhaustResult> {
  const { maxSteps, scenario, maxSchedules = 100_000, exploreStart = false, reduce = true, maxPreemptions, maxDelays, ...simulation } = options;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidArgumentError("maxSteps", `exhaust: maxSteps must be a positive integer (the bound on a schedule's steps), got ${String(maxSteps)}`);
  if (!Number.isInteger(maxSchedules) || maxSchedules < 1) throw new InvalidArgumentError("maxSchedules", `exhaust: maxSchedules must be a positive integer, got ${String(maxSchedules)}`);
  for (const [name, bound] of [["maxPreemptions", maxPreemptions], ["maxDelays", maxDelays]] as const) {
    if (bound !== undefined && (!Number.isInteger(bound) || bound < 0)) throw new InvalidArgumentError(name, `exhaust: ${name} must be a non-negative integer (0 explores only the default schedule's neighbours of cost 0), got ${String(bound)}`);
  }
  if (typeof scenario !== "function") throw new InvalidArgumentError("scenario", "exhaust: scenario must be a function (sim) => Promise<void> that issues the operations and awaits sim.run()");
  const bounds: Bounds = { ...(maxPreemptions === undefined ? {} : { preemptions: maxPreemptions }), ...(maxDelays === undefined ? {} : { delays: maxDelays }) };
  const bounded = maxPreemptions !== undefined || maxDelays !== undefined;
  if (reduce && !bounded && simulation.faults === undefined && simulation.time === undefined) return reducedSearch({ ...simulation, maxSteps }, scenario, maxSchedules, exploreStart);
  let prefix: number[] = [];
  let schedules = 0;
  let truncated = 0;
  let deepest = 0;
  for (;;) {
    const decisions: Decision[] = [];
    const explore = { on: exploreStart };
    const chooser = followPrefix(prefix, decisions, explore, bounds);
    const sim = simulate({ ...simulation, chooser, maxSteps });
    let error: unknown;
    try {
      await sim.start();
      explore.on = true;
      await scenario(sim);
    } catch (thrown) {
      error = thrown;
    } finally {
      await sim.stop().catch(() => undefined);
    }
    schedules++;
    deepest = Math.max(deepest, decisions.length);
    if (error instanceof CivitasError && error.code === "SIMULATION_STEP_LIMIT") truncated++;
    else if (error !== undefined) {
      if (error instanceof CivitasError && error.code === "SIMULATION_DIVERGED") throw error;
      return { schedules, pruned: 0, reduced: false, bounded, truncated, complete: false, deepest, failure: { error, choices: decisions.map((d) => d.chosen) } };
    }
    const next = nextPrefix(decisions);
    if (next === undefined) return { schedules, pruned: 0, reduced: false, bounded, truncated, complete: truncated === 0, deepest };
    if (schedules >= maxSchedules) return { schedules, pruned: 0, reduced: false, bounded, truncated, complete: false, deepest };
    prefix = next;
  }
}

/**
 * A chooser that takes `prefix`'s choices, then the first option the bounds
 * allow, recording every decision while `explore.on`. A step is a
 * preemption when the agent of the step before could still go on and
 * another one is taken; the *i*-th ready option costs *i* delays.
 */
function followPrefix(prefix: readonly number[], decisions: Decision[], explore: { on: boolean }, bounds: Bounds): Chooser {
  let preemptions = 0;
  let delays = 0;
  let previous: string | undefined;
  const decide = (allowed: readonly number[], options: number, what: string): number => {
    const at = decisions.length;
    const chosen = at < prefix.length ? (prefix[at] as number) : (allowed[0] as number);
    if (chosen >= options || !allowed.includes(chosen)) {
      throw new CivitasError(
        "SIMULATION_DIVERGED",
        `exhaust: choice ${at} (${what}) offered ${options} options where an earlier run of the same prefix offered option ${chosen}; the scenario is not deterministic given the choices (a wall-clock time, Math.random or I/O outside the simulation?)`,
      );
    }
    decisions.push({ chosen, allowed });
    return chosen;
  };
  return {
    choose: (ready: readonly SimulationChoice[]) => {
      if (!explore.on) return 0;
      const agentOf = (choice: SimulationChoice): string => choice.agent ?? choice.thread;
      const canGoOn = previous !== undefined && ready.some((choice) => agentOf(choice) === previous);
      const preempts = ready.map((choice) => (canGoOn && agentOf(choice) !== previous ? 1 : 0));
      const allowed = ready.map((_, i) => i).filter((i) => (bounds.preemptions === undefined || preemptions + (preempts[i] as number) <= bounds.preemptions) && (bounds.delays === undefined || delays + i <= bounds.delays));
      const chosen = decide(allowed, ready.length, ready.map((choice) => choice.key).join(", "));
      preemptions += preempts[chosen] as number;
      delays += chosen;
      previous = agentOf(ready[chosen] as SimulationChoice);
      return chosen;
    },
    fault: (choice: SimulationChoice, kind: SimulationFaultKind) => explore.on && decide([0, 1], 2, `${kind} at ${choice.key}`) === 1,
  };
}

/** The prefix of the next schedule in depth-first order, or `undefined` when every one has been run. */
function nextPrefix(decisions: readonly Decision[]): number[] | undefined {
  for (let at = decisions.length - 1; at >= 0; at--) {
    const decision = decisions[at] as Decision;
    const following = decision.allowed.find((option) => option > decision.chosen);
    if (following !== undefined) return [...decisions.slice(0, at).map((d) => d.chosen), following];
  }
  return undefined;
}

/** `exhaust` with sleep sets: one schedule per class of equivalent ones (see {@link SleepSetSearch}). */
async function reducedSearch(simulation: SimulationOptions & { maxSteps: number }, scenario: ExhaustOptions["scenario"], maxSchedules: number, exploreStart: boolean): Promise<ExhaustResult> {
  const search = new SleepSetSearch();
  let schedules = 0;
  let pruned = 0;
  let truncated = 0;
  let deepest = 0;
  for (;;) {
    const explore = { on: exploreStart };
    const sim = simulate({ ...simulation, chooser: search.chooser(explore) });
    let error: unknown;
    try {
      await sim.start();
      explore.on = true;
      await scenario(sim);
    } catch (thrown) {
      error = thrown;
    } finally {
      await sim.stop().catch(() => undefined);
    }
    deepest = Math.max(deepest, search.made);
    if (search.asleep) pruned++;
    else {
      schedules++;
      if (error instanceof CivitasError && error.code === "SIMULATION_STEP_LIMIT") truncated++;
      else if (error !== undefined) {
        if (error instanceof CivitasError && error.code === "SIMULATION_DIVERGED") throw error;
        return { schedules, pruned, reduced: true, bounded: false, truncated, complete: false, deepest, failure: { error, choices: search.choices() } };
      }
    }
    if (!search.next()) return { schedules, pruned, reduced: true, bounded: false, truncated, complete: truncated === 0, deepest };
    if (schedules + pruned >= maxSchedules) return { schedules, pruned, reduced: true, bounded: false, truncated, complete: false, deepest };
  }
}
