/**
 * Hooks need not be async: a plain function that returns nothing works
 * wherever an async hook does.
 *
 * Each test pins a defect found by the second review of the message loop and
 * lifecycle (these tests were in test/review/loop2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, Supervisor } from "../../src/index.js";
import { runtimes } from "../support/runtimes.js";

const runtime = runtimes();

describe("hooks that are not async", () => {
  it("a plain (non-async) onStart that returns nothing starts the agent, as a plain onStop/onSuspend/handle/onError would", async () => {
    class SyncStart extends AgentProcess {
      started = 0;
      // plain JavaScript style: not async, returns undefined
      override onStart = (() => {
        this.started++;
      }) as unknown as () => Promise<void>;
    }
    const agent = new SyncStart("sync-start");
    const rt = runtime(new Supervisor("root", { children: [agent], backoffBaseMs: 0, maxRestarts: 0 }));
    await expect(rt.start()).resolves.toBeUndefined(); // today: START_FAILED caused by "Cannot read properties of undefined (reading 'then')"
    expect(agent.started).toBe(1);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
  });
});
