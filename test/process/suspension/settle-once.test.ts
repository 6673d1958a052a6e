/**
 * An approved pause is settled once: one agent.resume receipt per
 * suspensionId, across restarts and failed writes.
 *
 * Each test pins a defect found by the review of durable suspension (SPEC §5,
 * §11) (these tests were in test/review/suspension-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, Supervisor } from "../../../src/index.js";
import { Probe, turns, waitUntil } from "../../support/agents.js";
import { Pausable, startedRig, teardown } from "./helpers.js";

afterEach(teardown);

const S = ProcessStatus;

describe("settle once across a sibling restart after a resume whose persist failed", () => {
  it("the approved pause is not settled a second time (one agent.resume receipt per suspensionId)", async () => {
    const crasher = new Probe("c0");
    const sleeper = new Pausable("s1");
    const sup = new Supervisor("sup", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [crasher, sleeper] });
    const r = await startedRig(sup);
    await r.runtime.suspend("s1", "approval");
    const id = sleeper.suspension!.suspensionId;
    r.store.failSets = true;
    await r.runtime.resume("s1", "alice", { suspensionId: id }); // degraded: RUNNING, the store still holds the marker
    r.store.failSets = false;
    expect(sleeper.status).toBe(S.RUNNING);
    await r.runtime.send("c0", { op: "crash" });
    await waitUntil(() => sleeper.incarnation === 2 && sleeper.status !== S.INITIALIZING && crasher.status === S.RUNNING, "restarted");
    if (sleeper.status === S.SUSPENDED) {
      // The only way back to RUNNING: resume the pause alice already settled.
      await r.runtime.resume("s1", "alice").catch(() => undefined);
    }
    expect(sleeper.status).toBe(S.RUNNING);
    const receipts = r.audit.ofType("agent.resume", "s1").filter((e) => e.details.suspensionId === id);
    expect(receipts).toHaveLength(1);
    // and the store no longer holds the settled pause: a later crash cannot bring it back
    await turns(20);
    expect(await r.store.marker("s1")).toBeUndefined();
  });
});
