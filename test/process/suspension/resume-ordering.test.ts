/**
 * A resume is ordered against its pause by the UUIDv7 of each: a resume sent
 * after the pause began lifts it, whatever the clocks did.
 *
 * Each test pins a defect found by the review of d33f573..HEAD (these tests
 * were in test/review/diff-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus } from "../../../src/index.js";
import { TestClock } from "../../../src/testing/test-clock.js";
import { Pausable, pausableRig, rig, teardown } from "./helpers.js";
import { waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

/** A TestClock whose reading can be stepped back, like a system clock corrected by NTP. */
class SteppingClock extends TestClock {
  offsetMs = 0;
  override now(): number {
    return super.now() + this.offsetMs;
  }
}

describe("a resume is ordered against the pause by UUIDv7", () => {
  it("a resume sent after the pause began is not dropped because the clock was stepped back", async () => {
    const clock = new SteppingClock();
    const { agent, ...r } = await pausableRig("a", { clock });
    await r.runtime.send("a", { op: "suspend", reason: "approve" });
    await waitUntil(() => agent.status === S.SUSPENDED, "suspended");
    clock.offsetMs = -60_000; // the wall clock is corrected back a minute while the approval is pending
    await r.runtime.resume("a", "alice"); // resolves...
    expect(agent.status).toBe(S.RUNNING); // ...so the agent must be running again
    expect(agent.resumes).toEqual(["alice"]);
  });

  it("a resume sent after the pause began is not dropped when something minted an id on the system clock in between (TestClock runtime)", async () => {
    const agents = Array.from({ length: 24 }, (_, i) => new Pausable(`a${i}`));
    const r = rig(agents); // TestClock: 2023, while Date.now() is today
    await r.runtime.start();
    for (const agent of agents) await r.runtime.send(agent.name, { op: "suspend", reason: "approve" });
    await waitUntil(() => agents.every((a) => a.status === S.SUSPENDED), "all suspended");
    for (const agent of agents) {
      new Pausable(`spare-${agent.name}`); // its constructor mints its id on the system clock (as a spawn would)
      await r.runtime.resume(agent.name, "alice");
    }
    const stillPaused = agents.filter((a) => a.status !== S.RUNNING).map((a) => a.name);
    expect(stillPaused).toEqual([]);
  });
});
