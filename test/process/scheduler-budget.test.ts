/**
 * The scheduler yields to the event loop about every 128 dispatches, however
 * many agents share the work.
 *
 * Each test pins a defect found by the second review of the message loop and
 * lifecycle (these tests were in test/review/loop2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, Supervisor } from "../../src/index.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const runtime = runtimes();

describe("the scheduler budget across many agents", () => {
  it("a storm spread over many agents still yields to the event loop about every 128 dispatches", async () => {
    const N = 1000;
    let handled = 0;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
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
    // docs/messaging.md "Fairness": every 128 dispatches across all agents, a setImmediate. Today ~N + 128 run between two turns.
    expect(Math.max(...deltas)).toBeLessThanOrEqual(2 * 128);
  });
});
