/**
 * After a failed start, calls from outside (send, ask, suspend, resume) reject
 * with RUNTIME_STOPPED instead of queueing or waiting forever.
 *
 * Each test pins a defect found by the review of the package as a consumer
 * uses it (these tests were in test/review/package-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, Runtime, silentLogger } from "../../src/index.js";
import { eventually } from "../runtime/fixtures.js";

const runtimes: Runtime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

describe("calls from outside after a failed start", () => {
  class Fine extends AgentProcess {}
  class Broken extends AgentProcess {
    override async onStart(): Promise<void> {
      throw new Error("cannot start");
    }
  }

  it("an ask and a resume sent during a start that fails reject with RUNTIME_STOPPED instead of waiting forever", async () => {
    const rt = new Runtime({ root: [new Fine("fine"), new Broken("broken")], logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    // to the agent that never starts, with no timeoutMs: only the failed start can end them
    const starting = rt.start();
    const asking = rt.ask("broken", {});
    const resuming = rt.resume("broken", "alice");
    await expect(starting).rejects.toMatchObject({ code: "START_FAILED" });
    await expect(asking).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
    await expect(resuming).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
  });

  it("send, ask, suspend and resume reject with RUNTIME_STOPPED instead of queueing for agents that were stopped again", async () => {
    const rt = new Runtime({ root: [new Fine("fine"), new Broken("broken")], logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    await expect(rt.start()).rejects.toMatchObject({ code: "START_FAILED" });
    await eventually(() => rt.getAgent("fine")?.status === ProcessStatus.STOPPED, "the started agent to be stopped again");
    for (const call of [
      () => rt.send("fine", {}),
      () => rt.ask("fine", {}, { timeoutMs: 1_000 }),
      () => rt.suspend("fine", "x"),
      () => rt.resume("fine", "alice"),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
    }
  });
});
