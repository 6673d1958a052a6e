/**
 * A supervisor stopped by its parent while it restarts a child is stopped
 * within its bounds, whatever the child does in onStart.
 *
 * Each test pins a defect found by the review of 13e654a..HEAD (announce by
 * suspensionId, no second loop or stop during a start) (these tests were in
 * test/review/final-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, Supervisor, DynamicSupervisor } from "../../src/index.js";
import { runtimes, sleep, until } from "../support/runtimes.js";

const runtime = runtimes();

describe("Supervisor (static) stopped by its parent while restarting a child whose onStart hangs", () => {
  it("is bounded as a DynamicSupervisor's is: the parent's ONE_FOR_ALL restart does not wait for the hanging onStart forever", async () => {
    let starts = 0;
    let started2 = false;
    class Flaky extends AgentProcess {
      override async onStart(): Promise<void> {
        starts++;
        if (starts === 2) {
          started2 = true;
          await new Promise<void>(() => undefined); // the restart's onStart hangs
        }
      }
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("sibling boom");
      }
    }
    const inner = new Supervisor("inner", { backoffBaseMs: 0, children: [new Flaky("w", { shutdownTimeoutMs: 50 })] });
    const crasher = new Crasher("crasher");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [inner, crasher] });
    const rt = runtime(root);
    await rt.start();
    await rt.send("w", {});
    await until(() => started2, "the restart's onStart", 1000, 2);
    await rt.send("crasher", {});
    await sleep(400);
    expect(crasher.incarnation, "root never restarts: inner's stop waits for w's hanging onStart (its work queue)").toBe(2);
  });
});

describe("a DynamicSupervisor stopped while a child restarts", () => {
  it("is bounded by the child's shutdownTimeoutMs (as a despawn of a starting child is), not held by its hanging onStart", async () => {
    let starts = 0;
    const never = new Promise<void>(() => undefined);
    let started2 = false;
    class Flaky extends AgentProcess {
      override async onStart(): Promise<void> {
        starts++;
        if (starts === 2) {
          started2 = true;
          await never; // the restart's onStart hangs
        }
      }
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("sibling boom");
      }
    }
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const crasher = new Crasher("crasher");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [dyn, crasher] });
    const rt = runtime(root);
    await rt.start();
    await dyn.spawn(Flaky, "w", { shutdownTimeoutMs: 50 });
    await rt.send("w", {});
    await until(() => started2, "the restart's onStart", 1000, 2);
    // A sibling crash makes root restart every child: dyn is stopped (not by runtime.stop()).
    await rt.send("crasher", {});
    await sleep(400);
    expect.soft(dyn.status).toBe("RUNNING"); expect(dyn.incarnation, "dyn's stop waits for w's hanging onStart forever: root never restarts").toBe(2);
    expect(crasher.incarnation).toBe(2);
  });
});
