/**
 * A supervisor stopped by its parent while it restarts a child is stopped
 * within its bounds, whatever the child does in onStart.
 *
 * Each test pins a defect found by the review of 13e654a..HEAD (announce by
 * suspensionId, no second loop or stop during a start) (these tests were in
 * test/review/final-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, Supervisor, DynamicSupervisor, ProcessStatus, type AgentFactory, type JsonObject, type Message } from "../../src/index.js";
import { runtimes, sleep, whenStarted, until } from "../support/runtimes.js";
import { besideCrasher } from "../support/probe-agents.js";

const runtime = runtimes();

/** Crashes on every message; its second onStart (the restart's) hangs forever. */
class HangsOnRestart extends AgentProcess {
  private starts = 0;
  /** The restart's onStart has begun (and hangs). */
  restartStarted = false;
  override async onStart(): Promise<void> {
    this.starts++;
    if (this.starts === 2) {
      this.restartStarted = true;
      await new Promise<void>(() => undefined); // the restart's onStart hangs
    }
  }
  override async handle(): Promise<void> {
    throw new Error("boom");
  }
}

describe("Supervisor (static) stopped by its parent while restarting a child whose onStart hangs", () => {
  it("is bounded as a DynamicSupervisor's is: the parent's ONE_FOR_ALL restart does not wait for the hanging onStart forever", async () => {
    const w = new HangsOnRestart("w", { shutdownTimeoutMs: 50 });
    const { root, crasher } = besideCrasher(new Supervisor("inner", { backoffBaseMs: 0, children: [w] }));
    const rt = await whenStarted(runtime(root));
    await rt.send("w", {});
    await until(() => w.restartStarted, "the restart's onStart", 1000, 2);
    await rt.send("crasher", {});
    await sleep(400);
    expect(crasher.incarnation, "root never restarts: inner's stop waits for w's hanging onStart (its work queue)").toBe(2);
  });
});

/**
 * `w` of class `Agent` under a DynamicSupervisor `dyn` beside a crasher (a
 * ONE_FOR_ALL root), crashed by `crash` and in its restart's onStart.
 */
async function restartingUnderDyn<A extends HangsOnRestart | HeldRestart>(Agent: AgentFactory<A>, shutdownTimeoutMs: number, crash: JsonObject) {
  const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
  const { root, crasher } = besideCrasher(dyn);
  const rt = await whenStarted(runtime(root));
  const w = await dyn.spawn(Agent, "w", { shutdownTimeoutMs });
  await rt.send("w", crash);
  await until(() => w.restartStarted, "the restart's onStart", 1000, 2);
  return { dyn, rt, w, crasher };
}

describe("a DynamicSupervisor stopped while a child restarts", () => {
  it("is bounded by the child's shutdownTimeoutMs (as a despawn of a starting child is), not held by its hanging onStart", async () => {
    const { dyn, rt, crasher } = await restartingUnderDyn(HangsOnRestart, 50, {});
    // A sibling crash makes root restart every child: dyn is stopped (not by runtime.stop()).
    await rt.send("crasher", {});
    await sleep(400);
    expect.soft(dyn.status).toBe("RUNNING"); expect(dyn.incarnation, "dyn's stop waits for w's hanging onStart forever: root never restarts").toBe(2);
    expect(crasher.incarnation).toBe(2);
  });
});

/** Crashes on a `crash` message (escalated: the default onError); its restart's onStart waits for `release`; records what it handles after. */
class HeldRestart extends AgentProcess {
  private starts = 0;
  handled: number[] = [];
  restartStarted = false;
  release!: () => void;
  override async onStart(): Promise<void> {
    if (++this.starts !== 2) return;
    this.restartStarted = true;
    await new Promise<void>((resolve) => (this.release = resolve));
  }
  override async handle(message: Message): Promise<void> {
    if (message.payload.crash === true) throw new Error("boom");
    this.handled.push(message.payload.n as number);
  }
}

describe("a DynamicSupervisor's child stopped with drain 'all' while its restart's onStart runs", () => {
  it("drains what was queued when onStart returned: the restart does not stop it first with the default drain", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const rt = await whenStarted(runtime(dyn));
    const w = await dyn.spawn(HeldRestart, "w");
    await rt.send("w", { crash: true });
    await until(() => w.restartStarted, "the restart's onStart", 1000, 2);
    const stopped = dyn.stop("w", { drain: "all" });
    await rt.send("w", { n: 1 });
    w.release();
    await stopped;
    expect(w.handled, "the stop with drain 'all' handled the message queued before onStart returned").toEqual([1]);
  });
});

describe("a DynamicSupervisor stopped by its parent while a child's restart is in onStart, then that child stopped with drain 'all'", () => {
  it("stops the child as the parent's stop asked (drain 'current'), the later stop joining it: what was queued is not handled", async () => {
    const { dyn, rt, w, crasher } = await restartingUnderDyn(HeldRestart, 5_000, { crash: true });
    // A sibling crash: root stops dyn (and with it w, in its restart's onStart), then starts both again.
    await rt.send("crasher", {});
    await until(() => dyn.status === ProcessStatus.STOPPING, "dyn's stop", 1000, 2);
    await rt.send("w", { n: 1 });
    const stopped = dyn.stop("w", { drain: "all" });
    w.release();
    await stopped;
    await until(() => crasher.incarnation === 2, "root's restart of its children", 1000, 2);
    expect(w.handled, "the later stop's drain 'all' won over the parent's stop, which came first").toEqual([]);
  });
});
