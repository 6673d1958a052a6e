import type { ProcessRunner } from "../../process/process-runner.js";
import type { ProcessStatus } from "../../contracts/process-status.js";
import type { Chooser, SimulationChoice } from "./types.js";

/** Touches everything: a step whose effects are not tracked (time, a packet, a kill). */
const EVERYTHING = "*";

/** A chooser told what each chosen step touched (the reduced search of `exhaust`). @internal */
export interface FootprintListener {
  /** What the step chosen last touched, from its choice until this choice point (everything that ran in between). */
  footprint(touched: ReadonlySet<string>): void;
}

/** Whether `chooser` wants footprints. @internal */
export function listensToFootprints(chooser: Chooser): chooser is Chooser & FootprintListener {
  return typeof (chooser as Partial<FootprintListener>).footprint === "function";
}

/** Whether two footprints share anything (`*` shares with everything). @internal */
export function overlap(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === undefined || b === undefined || a.has(EVERYTHING) || b.has(EVERYTHING)) return true;
  for (const x of a) if (b.has(x)) return true;
  return false;
}

/**
 * Records what a step touches, as the engine sees it happen (never guessed
 * from the step's kind alone): the agent whose code the step runs, the
 * store keys read and written, audit appends, and — by comparing every
 * agent's mailbox size, status and incarnation before and after — the
 * mailboxes it sent to and the agents it stopped, started or restarted
 * (with the supervision tree, `sup`). Agents are assumed to share nothing
 * but messages, the store and the audit log.
 * @internal
 */
export class FootprintRecorder {
  private touched = new Set<string>();
  private readonly before = new Map<string, readonly [ProcessRunner, ProcessStatus, number]>();

  touch(what: string): void {
    this.touched.add(what);
  }

  /** A choice was taken: start its footprint from what it runs, and remember every agent as it is. */
  begin(choice: SimulationChoice | undefined, runners: ReadonlyMap<string, ProcessRunner>): void {
    this.touched = new Set();
    if (choice === undefined || choice.agent === undefined || choice.kind === "net" || choice.kind === "time") this.touched.add(EVERYTHING);
    else {
      this.touched.add(`agent:${choice.agent}`);
      if (choice.kind === "store") this.touched.add(`store:${choice.agent}`);
      if (choice.kind === "audit") this.touched.add("audit");
    }
    this.before.clear();
    for (const [name, r] of runners) this.before.set(name, [r, r.currentStatus, r.mailbox.size]);
  }

  /** The footprint of the step begun last, with the agents whose mailbox, status or incarnation changed since. */
  end(runners: ReadonlyMap<string, ProcessRunner>): ReadonlySet<string> {
    for (const [name, r] of runners) {
      const was = this.before.get(name);
      if (was !== undefined && was[0] === r && was[1] === r.currentStatus && was[2] === r.mailbox.size) continue;
      this.touched.add(`agent:${name}`);
      if (was === undefined || was[0] !== r || was[1] !== r.currentStatus) this.touched.add("sup");
    }
    if (runners.size < this.before.size) this.touched.add("sup");
    return this.touched;
  }
}
