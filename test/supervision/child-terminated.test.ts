/**
 * onChildTerminated goes to the spawner of the child, and only to it.
 *
 * Each test pins a defect found by the second review of supervision (these
 * tests were in test/review/supervision2-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { Spawner, bossWithChild, stopAll, turns } from "../support/agents.js";

afterEach(stopAll);

describe("onChildTerminated goes to the spawner, and only to it", () => {
  it("a child whose spawner was despawned is not reported to a new, unrelated agent that reuses the spawner's name", async () => {
    const { dyn, boss } = await bossWithChild(Spawner);
    await dyn.despawn("boss"); // the spawner is gone for good; 'w' lives on
    const impostor = await dyn.spawn(Spawner, "boss"); // a different agent that happens to reuse the name
    expect(impostor).not.toBe(boss);
    await dyn.despawn("w");
    await turns(30);
    expect(boss.terminated).toEqual([]);
    // the new 'boss' never spawned 'w': SPEC 6 reports onChildTerminated to the spawner only
    expect(impostor.terminated).toEqual([]);
  });
});
