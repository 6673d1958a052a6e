/**
 * The Runtime's public calls (suspend, resume, ask) refuse bad arguments with
 * INVALID_ARGUMENT, never a raw TypeError or a silent default.
 *
 * Each test pins a defect found by the review of Runtime.fromTopology and the
 * Runtime's public API (these tests were in test/review/topology-
 * review.test.ts).
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import { AgentProcess, CivitasError, ProcessStatus, Runtime, silentLogger, type Message } from "../../src/index.js";

const started: Runtime[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(started.splice(0).map((rt) => rt.stop()));
});

class Worker extends AgentProcess {}

describe("Runtime.suspend / resume argument checking", () => {
  it.each([
    ["suspend", (rt: Runtime) => rt.suspend("a", "why", null as unknown as undefined)],
    ["resume", (rt: Runtime) => rt.resume("a", "alice", null as unknown as undefined)],
  ])("%s with null options rejects with INVALID_ARGUMENT, not a raw TypeError", async (_op, call) => {
    const rt = new Runtime({ root: [new Worker("a")], logger: silentLogger, keepAlive: false });
    started.push(rt);
    await rt.start();
    const error = await call(rt).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CivitasError);
    expect((error as CivitasError).code).toBe("INVALID_ARGUMENT");
    expect(rt.getAgent("a")?.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("Runtime.ask timeoutMs", () => {
  it("ask with timeoutMs: null is refused like suspend's, not silently turned into the 30 s default", async () => {
    class Echo extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        return this.reply({ ...message.payload });
      }
    }
    const rt = new Runtime({ root: [new Echo("a")], logger: silentLogger, keepAlive: false });
    started.push(rt);
    await rt.start();
    const suspendError = await rt.suspend("a", "x", { timeoutMs: null as unknown as number }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((suspendError as CivitasError).code).toBe("INVALID_ARGUMENT");
    const askError = await rt.ask("a", {}, { timeoutMs: null as unknown as number }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((askError as CivitasError | undefined)?.code).toBe("INVALID_ARGUMENT");
  });
});
