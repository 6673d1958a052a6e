import { CivitasError } from "../../errors/civitas-error.js";
import { overlap, type FootprintListener } from "./footprint.js";
import type { Chooser, SimulationChoice } from "./types.js";

/** A choice point of the current schedule: what was ready, what runs, what was explored, what sleeps. */
interface Level {
  readonly keys: readonly string[];
  chosen: string;
  /** What the chosen step touched (unknown until the next choice point: then it counts as touching everything). */
  footprint: ReadonlySet<string> | undefined;
  /** Choices explored here already, with what they touched. */
  readonly done: Map<string, ReadonlySet<string> | undefined>;
  /** Choices that need not run here: a schedule equivalent to one taking them was (or will be) explored. */
  sleep: ReadonlyMap<string, ReadonlySet<string> | undefined>;
}

/** Thrown by the chooser when every ready choice sleeps: the rest of this schedule is equivalent to one explored already. */
class ScheduleAsleep extends CivitasError {
  constructor() {
    super("SIMULATION_PRUNED", "exhaust: every ready choice sleeps here; the schedule is equivalent to one explored already");
  }
}

/**
 * The reduced depth-first search of `exhaust`: sleep sets (Godefroid) over
 * the footprints the engine records. A step explored at a choice point, or
 * asleep there, stays asleep in the next choice points while the steps
 * taken touch nothing it touched: running it later would only reorder
 * independent steps, a schedule equivalent to one explored. So each class
 * of equivalent complete schedules is run once; a schedule where every
 * ready choice sleeps is cut (pruned).
 * @internal
 */
export class SleepSetSearch {
  private readonly path: Level[] = [];
  /** How many levels of `path` the next schedule follows. */
  private prefix = 0;
  private depth = 0;
  private pending: ReadonlyMap<string, ReadonlySet<string> | undefined> = new Map();
  /** Whether the schedule just run was cut because every ready choice slept. */
  asleep = false;

  /** A chooser for the next schedule; `explore.on` is false while the system starts (first choice, not explored). */
  chooser(explore: { on: boolean }): Chooser & FootprintListener {
    this.depth = 0;
    this.pending = new Map();
    this.asleep = false;
    return {
      footprint: (touched) => {
        if (!explore.on || this.depth === 0) return;
        const level = this.path[this.depth - 1] as Level;
        level.footprint = new Set(touched);
        const sleep = new Map<string, ReadonlySet<string> | undefined>();
        for (const from of [level.sleep, level.done]) for (const [key, footprint] of from) if (key !== level.chosen && !overlap(footprint, level.footprint)) sleep.set(key, footprint);
        this.pending = sleep;
      },
      choose: (ready: readonly SimulationChoice[]) => {
        if (!explore.on) return 0;
        const keys = ready.map((choice) => choice.key);
        const at = this.depth++;
        if (at < this.prefix) {
          const level = this.path[at] as Level;
          level.sleep = this.pending;
          const index = keys.indexOf(level.chosen);
          if (index < 0) throw new CivitasError("SIMULATION_DIVERGED", `exhaust: choice ${at} offered ${keys.join(", ")}, without ${level.chosen} which an earlier run of the same prefix offered; the scenario is not deterministic given the choices`);
          return index;
        }
        const sleep = this.pending;
        const index = keys.findIndex((key) => !sleep.has(key));
        if (index < 0) {
          this.asleep = true;
          throw new ScheduleAsleep();
        }
        this.path[at] = { keys, chosen: keys[index] as string, footprint: undefined, done: new Map(), sleep };
        this.path.length = at + 1;
        this.prefix = at + 1;
        this.pending = new Map();
        return index;
      },
    };
  }

  /** The choices of the schedule just run, as indices. */
  choices(): number[] {
    return this.path.slice(0, this.depth).map((level) => level.keys.indexOf(level.chosen));
  }

  /** How many choice points the schedule just run had. */
  get made(): number {
    return this.depth;
  }

  /** Moves to the next schedule: the deepest choice point with a choice neither explored nor asleep. `false` when none is left. */
  next(): boolean {
    this.path.length = Math.min(this.path.length, this.depth);
    for (let at = this.path.length - 1; at >= 0; at--) {
      const level = this.path[at] as Level;
      level.done.set(level.chosen, level.footprint);
      const untried = level.keys.find((key) => !level.done.has(key) && !level.sleep.has(key));
      if (untried !== undefined) {
        level.chosen = untried;
        level.footprint = undefined;
        this.path.length = at + 1;
        this.prefix = at + 1;
        return true;
      }
    }
    this.path.length = 0;
    return false;
  }
}
