import type { Clock, TimerHandle } from "../../time/clock.js";

interface VirtualTimer {
  /** Its rank among the timers of its owner: timers due at once fire by owner, then rank, whatever order different agents armed them in. */
  readonly id: number;
  readonly dueMs: number;
  readonly fn: () => void;
  /** The agent whose step armed it (a handler may be waiting on it), if any. */
  readonly owner: string | undefined;
  /** Armed outside the main runtime: `"outside"` by a peer, `node:<name>` by another node's runtime; a kill of the main runtime keeps it. */
  readonly group: string | undefined;
}

/**
 * The virtual time of a simulation: timers never fire on their own; the
 * simulation fires the earliest when nothing else is ready.
 */
export class SimulatedClock implements Clock {
  private current: number;
  private timers: VirtualTimer[] = [];
  /** Timers armed so far, per owner (`""` for none). */
  private readonly armed = new Map<string, number>();
  /** The agent whose step runs now: timers armed meanwhile are its. */
  owner: string | undefined;

  constructor(startMs: number) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    return this.arm(fn, delayMs, this.owner, undefined);
  }

  /** The same virtual time for something outside the simulated process (a peer): its timers survive a kill. */
  outside(): Clock {
    return { now: () => this.current, setTimeout: (fn, delayMs) => this.arm(fn, delayMs, undefined, "outside") };
  }

  /** The same virtual time for the runtime of another node (`group`): its timers survive a kill of the main runtime, and go with {@link SimulatedClock.clearGroup}. */
  grouped(group: string): Clock {
    return { now: () => this.current, setTimeout: (fn, delayMs) => this.arm(fn, delayMs, this.owner, group) };
  }

  private arm(fn: () => void, delayMs: number, owner: string | undefined, group: string | undefined): TimerHandle {
    const id = this.armed.get(owner ?? "") ?? 0;
    this.armed.set(owner ?? "", id + 1);
    const timer: VirtualTimer = { id, dueMs: this.current + Math.max(0, delayMs), fn, owner, group };
    this.timers.push(timer);
    return {
      cancel: () => {
        const at = this.timers.indexOf(timer);
        if (at >= 0) this.timers.splice(at, 1);
      },
    };
  }

  /** Moves time on by `ms` without firing anything (simulated latency; due timers fire when chosen). */
  advance(ms: number): void {
    this.current += ms;
  }

  /** Timers armed and not yet fired or cancelled. */
  get pending(): number {
    return this.timers.length;
  }

  /** Whether a timer armed during `agent`'s steps waits. */
  ownsTimer(agent: string): boolean {
    return this.timers.some((t) => t.owner === agent);
  }

  /** The group of the earliest timer (`undefined`: the main runtime's, or none waits). */
  get nextGroup(): string | undefined {
    return this.earliest()?.group;
  }

  /** When the earliest timer is due, or `undefined` when none waits. */
  get nextDueMs(): number | undefined {
    return this.earliest()?.dueMs;
  }

  /**
   * Moves time to the earliest timer and fires it, with {@link SimulatedClock.owner}
   * set to the agent that armed it (the caller clears it once what the timer
   * set off has run); returns its due time, or `undefined` when none waits.
   */
  fireNext(): number | undefined {
    const best = this.earliest();
    if (best === undefined) return undefined;
    this.timers.splice(this.timers.indexOf(best), 1);
    this.current = Math.max(this.current, best.dueMs);
    this.owner = best.owner;
    best.fn();
    return best.dueMs;
  }

  private earliest(): VirtualTimer | undefined {
    let best: VirtualTimer | undefined;
    for (const t of this.timers) if (best === undefined || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && before(t, best))) best = t;
    return best;
  }

  /** Forgets every timer (a kill discards them with the process; with `keepOutside`, those armed through {@link SimulatedClock.outside} or {@link SimulatedClock.grouped} stay). */
  clear(keepOutside = false): void {
    this.timers = keepOutside ? this.timers.filter((t) => t.group !== undefined) : [];
  }

  /** Forgets the timers armed through `grouped(group)` (a kill of that node). */
  clearGroup(group: string): void {
    this.timers = this.timers.filter((t) => t.group !== group);
  }
}

/** Order of two timers due at the same time: by owner, then by rank within the owner. */
function before(a: VirtualTimer, b: VirtualTimer): boolean {
  const x = a.owner ?? "";
  const y = b.owner ?? "";
  return x === y ? a.id < b.id : x < y;
}
