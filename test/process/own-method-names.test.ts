/**
 * An agent's own methods never collide with the runtime's: the runtime never
 * calls a method an agent class happens to define under an internal name.
 *
 * Each test pins a defect found by the review of the package as a consumer
 * uses it (these tests were in test/review/package-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ProcessStatus, Runtime, silentLogger, Supervisor, type Message } from "../../src/index.js";

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
