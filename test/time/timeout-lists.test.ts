import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TestClock } from "../../src/testing/test-clock.js";
import type { Clock } from "../../src/time/clock.js";
import { TimeoutLists, type Expiring } from "../../src/time/timeout-lists.js";

interface Entry extends Expiring<Entry> {
  readonly name: string;
}

function entry(name: string): Entry {
  return { name, deadlineMs: 0, list: undefined, prev: undefined, next: undefined };
}

function lists(clock: TestClock): { timeouts: TimeoutLists<Entry>; fired: string[] } {
  const fired: string[] = [];
  const timeouts = new TimeoutLists<Entry>(clock, (e) => fired.push(`${e.name}@${clock.now() - 1_700_000_000_000}`));
  return { timeouts, fired };
}

describe("TimeoutLists", () => {
  it("fires each entry at its deadline, never before, in deadline order across lists", async () => {
    const clock = new TestClock();
    const { timeouts, fired } = lists(clock);
    const start = clock.now();
    timeouts.add(entry("a30"), 30, start);
    timeouts.add(entry("b10"), 10, start);
    await clock.advance(5);
    timeouts.add(entry("c10"), 10, clock.now());
    await clock.advance(9);
    expect(fired).toEqual(["b10@10"]);
    await clock.advance(100);
    expect(fired).toEqual(["b10@10", "c10@15", "a30@30"]);
    expect(timeouts.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it("arms one timer per timeout length however many entries wait, and none for a removal", async () => {
    const clock = new TestClock();
    const { timeouts, fired } = lists(clock);
    const entries = Array.from({ length: 50 }, (_, i) => entry(`e${i}`));
    for (const e of entries) timeouts.add(e, 1_000, clock.now());
    expect(clock.pendingTimers).toBe(1);
    for (const e of entries.slice(0, 49)) timeouts.remove(e);
    expect(clock.pendingTimers).toBe(1);
    expect(timeouts.size).toBe(1);
    await clock.advance(1_000);
    expect(fired).toEqual(["e49@1000"]);
  });

  it("re-arms for the oldest entry left when the entry its timer was armed for was removed", async () => {
    const clock = new TestClock();
    const { timeouts, fired } = lists(clock);
    const first = entry("first");
    timeouts.add(first, 100, clock.now());
    await clock.advance(40);
    timeouts.add(entry("second"), 100, clock.now());
    timeouts.remove(first);
    await clock.advance(60);
    expect(fired).toEqual([]);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(40);
    expect(fired).toEqual(["second@140"]);
  });

  it("lets a timeout callback add to the list it fires from without arming twice", async () => {
    const clock = new TestClock();
    const fired: string[] = [];
    const timeouts: TimeoutLists<Entry> = new TimeoutLists<Entry>(clock, (e) => {
      fired.push(e.name);
      if (fired.length < 3) timeouts.add(entry(`${e.name}+`), 10, clock.now());
    });
    timeouts.add(entry("x"), 10, clock.now());
    await clock.advance(10);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(100);
    expect(fired).toEqual(["x", "x+", "x++"]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("removing twice, or an entry that already fired, is a no-op", async () => {
    const clock = new TestClock();
    const { timeouts, fired } = lists(clock);
    const a = entry("a");
    const b = entry("b");
    timeouts.add(a, 10, clock.now());
    timeouts.add(b, 10, clock.now());
    timeouts.remove(a);
    timeouts.remove(a);
    await clock.advance(10);
    timeouts.remove(b);
    expect(fired).toEqual(["b@10"]);
    expect(timeouts.size).toBe(0);
  });

  it("matches a model over random add/remove/advance sequences: every entry fires once, at its deadline, unless removed first", async () => {
    type Op = { kind: "add"; timeoutMs: number } | { kind: "remove"; pick: number } | { kind: "advance"; ms: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("add" as const), timeoutMs: fc.constantFrom(0, 5, 10, 25) }),
      fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 15 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const clock = new TestClock();
        const firedAt = new Map<string, number>();
        const timeouts = new TimeoutLists<Entry>(clock, (e) => {
          expect(firedAt.has(e.name)).toBe(false);
          firedAt.set(e.name, clock.now());
        });
        const live: { e: Entry; deadline: number }[] = [];
        const expected = new Map<string, number>();
        let n = 0;
        for (const o of ops) {
          if (o.kind === "add") {
            const e = entry(`e${n++}`);
            timeouts.add(e, o.timeoutMs, clock.now());
            live.push({ e, deadline: clock.now() + o.timeoutMs });
          } else if (o.kind === "remove" && live.length > 0) {
            const [victim] = live.splice(o.pick % live.length, 1);
            if (victim !== undefined && !firedAt.has(victim.e.name)) timeouts.remove(victim.e);
          } else if (o.kind === "advance") {
            await clock.advance(o.ms);
          }
          if (o.kind !== "advance") continue;
          for (let i = live.length - 1; i >= 0; i--) {
            const item = live[i] as { e: Entry; deadline: number };
            if (item.deadline <= clock.now()) {
              expected.set(item.e.name, item.deadline);
              live.splice(i, 1);
            }
          }
        }
        expect(firedAt).toEqual(expected);
        expect(timeouts.size).toBe(live.length);
      }),
      { numRuns: 300 },
    );
  });
});

interface HoldingTimer {
  held: boolean;
  cancelled: boolean;
  refs: number;
  unrefs: number;
  fire: () => void;
}

/** Resolves after a turn of the event loop (after the immediates queued before it). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A clock whose timers report whether they hold the process (see TimerHandle.ref), and how often they were told to. */
function holdingClock(): { clock: Clock; timers: HoldingTimer[] } {
  const timers: HoldingTimer[] = [];
  const clock: Clock = {
    now: () => 1_000,
    setTimeout(fn) {
      const timer: HoldingTimer = { held: false, cancelled: false, refs: 0, unrefs: 0, fire: fn };
      timers.push(timer);
      return {
        cancel: () => void (timer.cancelled = true),
        ref: () => {
          timer.held = true;
          timer.refs++;
        },
        unref: () => {
          timer.held = false;
          timer.unrefs++;
        },
      };
    },
  };
  return { clock, timers };
}

describe("TimeoutLists and the process", () => {
  it("a timer holds the process while an entry waits on it and lets go at the next turn after the last one left: a waiting ask's timeout always fires, an answered one holds nothing", async () => {
    const { clock, timers } = holdingClock();
    const timeouts = new TimeoutLists<Entry>(clock, () => undefined);
    const a = entry("a");
    const b = entry("b");
    timeouts.add(a, 100, clock.now());
    expect(timers.map((t) => t.held)).toEqual([true]);
    timeouts.add(b, 100, clock.now());
    timeouts.remove(a);
    expect(timers.map((t) => t.held)).toEqual([true]); // b still waits
    timeouts.remove(b);
    await nextTurn();
    expect(timers.map((t) => t.held)).toEqual([false]); // answered: armed for the next ask, holding nothing
    timeouts.add(entry("c"), 100, clock.now());
    expect(timers.map((t) => t.held)).toEqual([true]); // the same timer, held again: no timer armed per ask
  });

  it("asks one after another in one turn hold the timer throughout: one ref and one unref for the run, not one per ask", async () => {
    const { clock, timers } = holdingClock();
    const timeouts = new TimeoutLists<Entry>(clock, () => undefined);
    for (let i = 0; i < 50; i++) {
      const asked = entry(`ask-${i}`);
      timeouts.add(asked, 100, clock.now());
      timeouts.remove(asked);
    }
    expect(timers.map((t) => [t.held, t.refs, t.unrefs])).toEqual([[true, 1, 0]]);
    const waiting = entry("still waiting at the turn");
    timeouts.add(waiting, 100, clock.now());
    await nextTurn();
    expect(timers.map((t) => [t.held, t.refs, t.unrefs])).toEqual([[true, 1, 0]]); // an entry came back: it keeps holding
    timeouts.remove(waiting);
    await nextTurn();
    expect(timers.map((t) => [t.held, t.refs, t.unrefs])).toEqual([[false, 1, 1]]);
  });

  it("clear() cancels every timer, so nothing of the owner stays reachable from one", () => {
    const { clock, timers } = holdingClock();
    const fired: string[] = [];
    const timeouts = new TimeoutLists<Entry>(clock, (e) => fired.push(e.name));
    timeouts.add(entry("waiting"), 100, clock.now());
    const answered = entry("answered");
    timeouts.add(answered, 200, clock.now());
    timeouts.remove(answered);
    timeouts.clear();
    expect(timers.map((t) => t.cancelled)).toEqual([true, true]);
    expect(timeouts.size).toBe(0);
    for (const timer of timers) timer.fire(); // a timer that raced the cancel finds nothing to time out
    expect(fired).toEqual([]);
  });
});
