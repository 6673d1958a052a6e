/**
 * The scheduler yields to the event loop once its 1 ms slice has passed,
 * looking at the time every 128 dispatches, however many agents share the work.
 *
 * Each test pins a defect found by the second review of the message loop and
 * lifecycle (these tests were in test/review/loop2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, Supervisor } from "../../src/index.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { Scheduler } from "../../src/contracts/scheduler.js";

const runtime = runtimes();

describe("the scheduler budget across many agents", () => {
  it("a storm spread over many agents whose handlers take 10 µs each still yields to the event loop about every 128 dispatches", async () => {
    const N = 1000;
    let handled = 0;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
        // 128 dispatches take at least 1.28 ms, past the 1 ms slice: the scheduler yields at each of its looks at the time
        const until = performance.now() + 0.01;
        while (performance.now() < until);
        handled++;
      }
    }
    const agents = Array.from({ length: N }, (_, i) => new Busy(`busy${i}`));
    const rt = await whenStarted(runtime(new Supervisor("root", { children: agents, backoffBaseMs: 0 })));
    const sends: Promise<void>[] = [];
    for (let round = 0; round < 3; round++) for (const a of agents) sends.push(rt.send(a.name, { round }));
    await Promise.all(sends);
    // how many dispatches happen between two turns of the event loop (setImmediate probes)
    const deltas: number[] = [];
    let last = handled;
    await new Promise<void>((resolve) => {
      const probe = (): void => {
        deltas.push(handled - last);
        last = handled;
        if (handled >= 3 * N) resolve();
        else setImmediate(probe);
      };
      setImmediate(probe);
    });
    // docs/messaging.md "Fairness": every 128 dispatches across all agents, a look at the time. The defect: ~N + 128 ran between two turns.
    expect(Math.max(...deltas)).toBeLessThanOrEqual(2 * 128);
  });
});

describe("the scheduler's time slice", () => {
  /** Ticks `times` dispatches, advancing the time by `stepMs` before each; returns the indexes (1-based) that were told to yield. */
  async function yieldsOver(times: number, stepMs: number): Promise<number[]> {
    let now = 0;
    const scheduler = new Scheduler(128, 1, () => now);
    const yielded: number[] = [];
    for (let i = 1; i <= times; i++) {
      now += stepMs;
      const pause = scheduler.tick({});
      if (pause !== undefined) {
        yielded.push(i);
        await pause;
      }
    }
    return yielded;
  }

  it("dispatches faster than the slice yield only at a look at the time once 1 ms has passed", async () => {
    // 0.001 ms each: 128 dispatches take 0.128 ms; the first look past 1 ms is at dispatch 1,024
    expect(await yieldsOver(3_000, 0.001)).toEqual([1_024, 2_048]);
  });

  it("dispatches slower than the slice yield at every look at the time, every 128", async () => {
    expect(await yieldsOver(600, 0.05)).toEqual([128, 256, 384, 512]);
  });

  it("time that stands still never yields: the slice, not the count, decides", async () => {
    expect(await yieldsOver(5_000, 0)).toEqual([]);
  });
});
