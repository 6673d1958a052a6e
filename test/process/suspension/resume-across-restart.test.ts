/**
 * A resume sent while the agent is SUSPENDED and queued across a ONE_FOR_ALL
 * restart into the same pause is acted on: runtime.resume() resolving means
 * the agent runs again.
 *
 * Each test pins a defect found by the sweep of bf6678e..HEAD (these tests
 * were in test/review/sweep-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, Supervisor } from "../../../src/index.js";
import { outcome } from "../../support/outcome.js";
import { runtimes, sleep, whenStarted, until } from "../../support/runtimes.js";
import { Crasher } from "../../support/probe-agents.js";

const runtime = runtimes();

describe("a resume sent while the agent is visibly SUSPENDED, queued across a ONE_FOR_ALL restart into the same (still unannounced) pause", () => {
  it("is not swallowed: runtime.resume() resolving means the agent runs again", async () => {
    let suspends = 0;
    class Pausing extends AgentProcess {
      override async onSuspend(): Promise<void> {
        suspends++;
        await sleep(60);
        // The first announcement fails: the pause stays stored `announced: false` (as CHANGELOG documents).
        if (suspends === 1) throw new Error("notify failed");
      }
    }
    const a = new Pausing("a");
    const c = new Crasher("c");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [a, c] });
    const rt = await whenStarted(runtime(root));
    void rt.suspend("a", "r").catch(() => undefined);
    await until(() => a.status === ProcessStatus.SUSPENDED && a.suspension !== undefined, "a SUSPENDED");
    // The pause is visible (status SUSPENDED, marker set): this resume is meant for it.
    const resumed = rt.resume("a", "alice");
    await rt.send("c", {}); // sibling crash: ONE_FOR_ALL restarts a while the resume is still queued
    const settled = await outcome(resumed, 1500);
    await until(() => a.incarnation === 2 && suspends >= 2, "a restarted and re-announced", 1500).catch(() => undefined);
    await sleep(100);
    expect(a.incarnation).toBe(2);
    // Either the resume is refused, or (resolved) the agent is RUNNING: never "resolved" with the agent still paused.
    if (settled !== "pending" && settled.ok) expect(a.status, "resume() resolved but the agent is still SUSPENDED").toBe(ProcessStatus.RUNNING);
    else expect(settled).not.toBe("pending");
  });
});
