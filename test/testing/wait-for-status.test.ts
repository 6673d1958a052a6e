import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, CivitasError, ProcessStatus, Runtime, silentLogger, type Message } from "../../src/index.js";
import { settle, TestClock, waitForStatus, WaitTimeoutError } from "../../src/entries/testing.js";

class Pauser extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    if (message.payload.pause === true) this.suspend("asked to");
  }
}

const runtimes: Runtime[] = [];

async function running(agent: AgentProcess): Promise<Runtime> {
  const runtime = new Runtime({ root: agent, logger: silentLogger, clock: new TestClock() });
  runtimes.push(runtime);
  await runtime.start();
  return runtime;
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
});

describe("waitForStatus", () => {
  it("resolves at once when the agent already has the status, with that status", async () => {
    const agent = new Pauser("p");
    await running(agent);
    await expect(waitForStatus(agent, ProcessStatus.RUNNING)).resolves.toBe(ProcessStatus.RUNNING);
  });

  it("resolves once the agent reaches the status later", async () => {
    const agent = new Pauser("p");
    const runtime = await running(agent);
    const waiting = waitForStatus(agent, ProcessStatus.SUSPENDED, { timeoutMs: 2000 });
    await runtime.send("p", { pause: true });
    await expect(waiting).resolves.toBe(ProcessStatus.SUSPENDED);
  });

  it("accepts a list of statuses and resolves with the one reached", async () => {
    const agent = new Pauser("p");
    await running(agent);
    await expect(waitForStatus(agent, [ProcessStatus.SUSPENDED, ProcessStatus.RUNNING])).resolves.toBe(ProcessStatus.RUNNING);
  });

  it("works for anything with a name and a status (a supervisor)", async () => {
    const runtime = await running(new Pauser("p"));
    await expect(waitForStatus({ name: runtime.root.name, status: ProcessStatus.RUNNING }, ProcessStatus.RUNNING)).resolves.toBe(ProcessStatus.RUNNING);
  });

  it("rejects with WAIT_TIMEOUT naming the agent, the status and the one it is in", async () => {
    const agent = new Pauser("payer");
    await running(agent);
    const started = Date.now();
    const error = await waitForStatus(agent, ProcessStatus.SUSPENDED, { timeoutMs: 30 }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toBeInstanceOf(CivitasError);
    expect(error).toMatchObject({ code: "WAIT_TIMEOUT", name: "WaitTimeoutError", agent: "payer", timeoutMs: 30, lastStatus: ProcessStatus.RUNNING });
    expect((error as Error).message).toBe("'payer' did not reach SUSPENDED within 30 ms (it is RUNNING)");
  });

  it("creates its timeout error before waiting, so the stack points at the caller", async () => {
    const agent = new Pauser("p");
    await running(agent);
    const error = (await waitForStatus(agent, ProcessStatus.STOPPED, { timeoutMs: 5 }).catch((e: unknown) => e)) as Error;
    expect(error.stack).toContain("wait-for-status.test.ts");
  });

  it("a timeout of 0 checks once", async () => {
    const agent = new Pauser("p");
    await running(agent);
    await expect(waitForStatus(agent, ProcessStatus.RUNNING, { timeoutMs: 0 })).resolves.toBe(ProcessStatus.RUNNING);
    await expect(waitForStatus(agent, ProcessStatus.STOPPED, { timeoutMs: 0 })).rejects.toMatchObject({ code: "WAIT_TIMEOUT" });
  });

  it("rejects with the signal's reason when aborted, before or during the wait", async () => {
    const agent = new Pauser("p");
    await running(agent);
    const reason = new Error("enough");
    await expect(waitForStatus(agent, ProcessStatus.STOPPED, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    const controller = new AbortController();
    const waiting = waitForStatus(agent, ProcessStatus.STOPPED, { signal: controller.signal, timeoutMs: 10_000 });
    await settle();
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it("rejects (never throws) for a bad timeoutMs", async () => {
    const agent = new Pauser("p");
    for (const timeoutMs of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const waiting = waitForStatus(agent, ProcessStatus.RUNNING, { timeoutMs });
      await expect(waiting).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
  });
});

describe("TestClock", () => {
  it("moves only when advanced, firing due timers in order and skipping cancelled ones", async () => {
    const clock = new TestClock(1000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push("b"), 20);
    clock.setTimeout(() => fired.push("a"), 10);
    const cancelled = clock.setTimeout(() => fired.push("x"), 15);
    clock.setTimeout(() => fired.push("c"), 20);
    cancelled.cancel();
    expect([clock.now(), clock.pendingTimers, clock.nextDueMs]).toEqual([1000, 3, 1010]);
    await clock.advance(15);
    expect([clock.now(), fired]).toEqual([1015, ["a"]]);
    await clock.runNext();
    expect([clock.now(), fired, clock.pendingTimers]).toEqual([1020, ["a", "b", "c"], 0]);
  });

  it("fires timers that a timer's async work arms within the same advance", async () => {
    const clock = new TestClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => {
      void Promise.resolve().then(() => clock.setTimeout(() => fired.push(clock.now()), 5));
    }, 5);
    await clock.advance(20);
    expect(fired).toEqual([10]);
  });
});
