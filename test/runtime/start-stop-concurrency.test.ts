/**
 * runtime.start() and runtime.stop() called together, in any order: each agent
 * starts once and stops once.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import type { CivitasError } from "civitas-ts";
import { AgentProcess } from "civitas-ts";
import { runtimes } from "../support/runtimes.js";

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- lifecycle
describe("start/stop under concurrency", () => {
  it("start and stop called together, in any order and repeatedly, start each agent once and stop it once", async () => {
    class Counted extends AgentProcess {
      starts = 0;
      stops = 0;
      override async onStart(): Promise<void> {
        await new Promise((r) => setTimeout(r, 5));
        this.starts++;
      }
      override async onStop(): Promise<void> {
        this.stops++;
      }
    }
    const a = new Counted("a");
    const b = new Counted("b");
    const rt = runtime([a, b]);
    const results = await Promise.allSettled([rt.start(), rt.stop(), rt.start(), rt.stop()]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(((results[2] as PromiseRejectedResult).reason as CivitasError).code).toBe("RUNTIME_STOPPED");
    expect([a.starts, a.stops, b.starts, b.stops]).toEqual([1, 1, 1, 1]);
    expect([a.status, b.status]).toEqual(["STOPPED", "STOPPED"]);
  });
});
