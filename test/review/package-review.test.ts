/**
 * Regression tests from a review of the package as a consumer uses it:
 * each pins a defect that review found.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ProcessStatus, Runtime, silentLogger, Supervisor, type Message } from "../../src/index.js";
import { eventually } from "../runtime/fixtures.js";

const runtimes: Runtime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

describe("an agent's own method names never collide with the runtime's", () => {
  it("an agent with its own close/attach/detach/startChild/stopChild/mailboxReady is run, despawned and stopped without the runtime calling them", async () => {
    const calls: string[] = [];
    class Worker extends AgentProcess {
      close(): void {
        calls.push("close");
      }
      attach(): void {
        calls.push("attach");
      }
      detach(): void {
        calls.push("detach");
      }
      startChild(): void {
        calls.push("startChild");
      }
      stopChild(): void {
        calls.push("stopChild");
      }
      mailboxReady(): void {
        calls.push("mailboxReady");
      }
      clearSuspension(): void {
        calls.push("clearSuspension");
      }
      override async handle(message: Message): Promise<Message> {
        return this.reply({ echo: message.payload });
      }
    }
    const pool = new DynamicSupervisor("pool");
    const fixed = new Worker("fixed");
    const rt = new Runtime({ root: new Supervisor("root", { children: [fixed, pool] }), logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    await rt.start();
    expect((await rt.ask("fixed", { n: 1 })).payload).toEqual({ echo: { n: 1 } });
    const spawned = await pool.spawn(Worker, "spawned");
    expect((await rt.ask("spawned", { n: 2 })).payload).toEqual({ echo: { n: 2 } });
    await pool.despawn("spawned");
    expect(spawned.mailbox.closed).toBe(true);
    await rt.stop();
    expect(fixed.status).toBe(ProcessStatus.STOPPED);
    expect(calls).toEqual([]);
  });
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
