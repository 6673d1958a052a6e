// Calls from outside on a runtime whose start() was never called reject with
// RUNTIME_NOT_STARTED and queue nothing; agents sending to each other while the
// tree starts up queue as usual (SPEC 7; issue 11, section 3).
import { describe, expect, it } from "vitest";
import { AgentProcess, CivitasError, RuntimeStateError, type Message, type Runtime } from "../../src/index.js";
import { Echo, eventually, Silent } from "./fixtures.js";
import { gate } from "../support/agents.js";
import { rejection } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const runtime = runtimes({ stop: "full" });

/** Every public call that messages an agent, on `name`. */
const CALLS: readonly [string, (rt: Runtime, name: string) => Promise<unknown>][] = [
  ["send", (rt, name) => rt.send(name, { n: 1 })],
  ["ask", (rt, name) => rt.ask(name, { n: 1 }, { timeoutMs: 50 })],
  ["suspend", (rt, name) => rt.suspend(name, "review")],
  ["resume", (rt, name) => rt.resume(name, "alice")],
];

async function expectState(promise: Promise<unknown>, code: "RUNTIME_NOT_STARTED" | "RUNTIME_STOPPED"): Promise<RuntimeStateError> {
  const error = (await rejection(promise)) as RuntimeStateError;
  expect(error).toBeInstanceOf(RuntimeStateError);
  expect(error).toBeInstanceOf(CivitasError);
  expect(error.name).toBe("RuntimeStateError");
  expect(error.code).toBe(code);
  return error;
}

describe("a runtime whose start() was never called", () => {
  it.each(CALLS)("rejects %s with RUNTIME_NOT_STARTED and queues nothing", async (call, make) => {
    const silent = new Silent("silent");
    const rt = runtime([silent]);
    const error = await expectState(make(rt, "silent"), "RUNTIME_NOT_STARTED");
    expect(error.message).toContain(`${call}('silent')`);
    expect(error.message).toContain("runtime.start()");
    expect(silent.mailbox.size).toBe(0);
    expect(silent.mailbox.prioritySize).toBe(0);
    // Started later, the agent finds nothing from before.
    await rt.start();
    await rt.send("silent", { n: 2 });
    await eventually(() => silent.handled.length === 1, "the later send to be handled");
    expect(silent.handled.map((m) => m.payload)).toEqual([{ n: 2 }]);
    expect(silent.status).toBe("RUNNING");
  });

  it("rejects without throwing synchronously (SPEC 11.2)", () => {
    const rt = runtime([new Silent("silent")]);
    for (const [, make] of CALLS) {
      const promise = make(rt, "silent");
      expect(promise).toBeInstanceOf(Promise);
      promise.catch(() => undefined);
    }
  });

  it("reports what is wrong with the call itself first: AGENT_NOT_FOUND, INVALID_APPROVER, PAYLOAD_NOT_SERIALIZABLE", async () => {
    const rt = runtime([new Silent("silent")]);
    expect(await rejection(rt.send("nobody", {}))).toMatchObject({ code: "AGENT_NOT_FOUND" });
    expect(await rejection(rt.resume("silent", "  "))).toMatchObject({ code: "INVALID_APPROVER" });
    expect(await rejection(rt.ask("silent", { at: new Date(0) } as never))).toMatchObject({ code: "PAYLOAD_NOT_SERIALIZABLE" });
  });

  it("accepts calls once start() was called, while it runs: they wait in the mailbox", async () => {
    const opened = gate();
    class SlowEcho extends Echo {
      override async onStart(): Promise<void> {
        await opened.promise;
      }
    }
    const echo = new SlowEcho("echo");
    const rt = runtime([echo]);
    const starting = rt.start();
    const reply = rt.ask("echo", { n: 1 }, { timeoutMs: 5_000 });
    await eventually(() => echo.mailbox.size === 1, "the ask to be queued");
    opened.open();
    await starting;
    expect((await reply).payload).toEqual({ n: 1, from: "echo" });
  });

  it("lets agents send to each other while the tree starts up", async () => {
    class Greeter extends AgentProcess {
      override async onStart(): Promise<void> {
        await this.send("listener", { hello: "from onStart" });
      }
    }
    const listener = new Silent("listener");
    await whenStarted(runtime([listener, new Greeter("greeter")]));
    await eventually(() => listener.handled.length === 1, "the start-up message to be handled");
    expect((listener.handled[0] as Message).payload).toEqual({ hello: "from onStart" });
  });
});

describe("a stopped runtime", () => {
  it.each(CALLS)("rejects %s with RUNTIME_STOPPED", async (_call, make) => {
    const rt = await whenStarted(runtime([new Silent("silent")]));
    await rt.stop();
    await expectState(make(rt, "silent"), "RUNTIME_STOPPED");
  });

  it.each(CALLS)("rejects %s with RUNTIME_STOPPED when it was stopped before it was ever started", async (_call, make) => {
    const rt = runtime([new Silent("silent")]);
    await rt.stop();
    await expectState(make(rt, "silent"), "RUNTIME_STOPPED");
  });

  it.each(CALLS)("rejects %s with RUNTIME_STOPPED after a failed start", async (_call, make) => {
    class Broken extends AgentProcess {
      override async onStart(): Promise<void> {
        throw new Error("no database");
      }
    }
    const rt = runtime([new Silent("silent"), new Broken("broken")]);
    await expect(rt.start()).rejects.toMatchObject({ code: "START_FAILED" });
    const error = await expectState(make(rt, "silent"), "RUNTIME_STOPPED");
    expect(error.message).toContain("START_FAILED");
  });
});
