import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { fastCheckChooser } from "../../../src/testing/simulation/fast-check-chooser.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { Simulation } from "../../../src/testing/simulation/types.js";
import { Forwarder, Recorder } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

const system = (): Supervisor => new Supervisor("root", { children: [new Recorder("recorder"), new Forwarder("f1"), new Forwarder("f2")] });

const sendsArbitrary = fc.array(fc.constantFrom("f1", "f2", "outside"), { maxLength: 12 });

/**
 * Sends note `seq` through each of `senders` (a forwarder, or straight from
 * outside), suspending the recorder before note `pauseAt`; runs; resumes; runs.
 */
async function exercise(sim: Simulation, senders: readonly string[], pauseAt: number): Promise<void> {
  for (const [seq, via] of senders.entries()) {
    if (seq === pauseAt) void sim.suspend("recorder", "hold");
    void sim.send(via === "outside" ? "recorder" : via, "note", { from: via, seq });
  }
  await sim.run(); // the built-in invariants (no business while SUSPENDED, legal transitions) are checked after every step
  const recorder = sim.view.agent<Recorder>("recorder");
  if (pauseAt < senders.length) {
    // The suspend went on the priority lane before the later notes: none of those from outside came first.
    expect(sim.view.status("recorder")).toBe("SUSPENDED");
    expect(recorder.seen.filter((s) => s.from === "outside" && s.seq >= pauseAt)).toEqual([]);
    const resumed = sim.resume("recorder", "alice", { suspensionId: recorder.suspension?.suspensionId as string });
    await sim.run();
    await resumed;
  }
  expect(recorder.seen).toHaveLength(senders.length);
  for (const via of ["f1", "f2", "outside"]) {
    const seqs = recorder.seen.filter((r) => r.from === via).map((r) => r.seq);
    expect(seqs).toEqual(senders.flatMap((v, seq) => (v === via ? [seq] : [])));
  }
}

describe("the runtime's guarantees under any schedule the simulation chooses", () => {
  it("FIFO per sender and recipient, priority before business, nothing lost or duplicated, nothing handled while SUSPENDED", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), sendsArbitrary, fc.nat({ max: 12 }), async (s, senders, pauseAt) => {
        const sim = await whenStarted(simulate({ root: system, chooser: fastCheckChooser(s) }));
        try {
          await exercise(sim, senders, pauseAt);
        } finally {
          await sim.stop(); // a failed expectation must not leave the simulation running for the next (shrinking) run
        }
      }),
      { numRuns: 60, seed: 1313 },
    );
  });
});
