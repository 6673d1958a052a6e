/**
 * While authorizeResume decides, the pause holds: a stop keeps it, control
 * messages still act.
 *
 * Each test pins a defect found by the review of durable suspension (SPEC §5,
 * §11) (these tests were in test/review/suspension-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus } from "../../../src/index.js";
import { heldAuthorizer, Pausable, pausableRig, startedRig, teardown } from "./helpers.js";
import { gate, turns, waitUntil } from "../../support/agents.js";
import { track } from "../../support/outcome.js";

afterEach(teardown);

const S = ProcessStatus;

describe("runtime.stop() while authorizeResume is deciding, with a sibling still stopping", () => {
  it("keeps the pause (as with a lone agent): no receipt, no onResume, no queued business handled after stop() began", async () => {
    const { authorizeResume, decision, asked } = heldAuthorizer();
    const a = new Pausable("a");
    const b = new Pausable("b");
    const r = await startedRig([a, b], { authorizeResume });
    await r.runtime.suspend("a", "hold");
    const marker = a.suspension!;
    await r.runtime.send("a", { seq: 1 }); // unapproved business, queued
    const busy = gate();
    b.blocker = busy;
    await r.runtime.send("b", { op: "block", seq: 1 });
    await waitUntil(() => b.entered === 1, "b busy");
    const resuming = track(r.runtime.resume("a", "alice"));
    await waitUntil(() => asked() === 1, "authorizeResume called");
    const stopping = track(r.runtime.stop()); // stops b first (reverse order), then a
    await turns(10);
    decision.open();
    await turns(20);
    busy.open();
    await stopping.promise;
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    expect(resuming.state).toBe("rejected"); // the caller is told the resume did not happen…
    // …so nothing of it may have taken effect
    expect(a.resumes).toEqual([]);
    expect(a.handled).toEqual([]);
    expect(r.audit.ofType("agent.resume", "a")).toEqual([]);
    expect(await r.store.marker("a")).toEqual(marker);
  });
});

describe("control while a resume is being authorized", () => {
  it("civitas.eval.halt stops a SUSPENDED agent even while its authorizeResume has not answered", async () => {
    const { authorizeResume, asked } = heldAuthorizer(); // the policy engine never answers (decision never opened)
    const { agent: a, ...r } = await pausableRig("a", { authorizeResume });
    await r.runtime.suspend("a", "hold");
    const resuming = track(r.runtime.resume("a", "alice"));
    await waitUntil(() => asked() === 1, "authorizeResume called");
    expect(a.status).toBe(S.SUSPENDED);
    // The emergency stop of the eval loop: a priority message a SUSPENDED agent must act on (S3).
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    for (let i = 0; i < 5; i++) await r.clock.advance(60_000);
    await turns(20);
    expect(a.status).toBe(S.STOPPED);
    expect(resuming.state).toBe("rejected");
  });
});
