/**
 * An audit sink that never settles does not hang the runtime (docs: a failing
 * sink is logged and the runtime carries on).
 *
 * Each test pins a defect found by the review of spans, audit events and
 * runtime events (these tests were in test/review/observability-
 * review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, type AuditSink, type RuntimeOptions } from "../../src/index.js";
import { type TestTracing } from "../support/tracing.js";

const started: Runtime[] = [];

const tracings: TestTracing[] = [];

function tracedRuntime(root: RuntimeOptions["root"], options: Partial<RuntimeOptions> = {}): Runtime {
  const rt = new Runtime({ root, logger: silentLogger, keepAlive: false, ...options });
  started.push(rt);
  return rt;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((rt) => Promise.race([rt.stop(), new Promise((r) => setTimeout(r, 500))])));
  await Promise.all(tracings.splice(0).map((t) => t.close()));
});

/** Settles with "timeout" when `p` has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  return Promise.race([p, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms))]);
}

class Idle extends AgentProcess {
  override async handle(): Promise<void> {}
}

describe("a never-settling audit sink", () => {
  const hanging: AuditSink = { emit: () => new Promise<void>(() => undefined) };

  it("does not hang runtime.suspend (docs: a failing sink is logged and the runtime carries on)", async () => {
    const rt = tracedRuntime([new Idle("a", { shutdownTimeoutMs: 200 })], { auditSink: hanging }); // the receipt waits at most this long
    await rt.start();
    const outcome = await within(
      rt.suspend("a", "review").then(() => "ok"),
      1_000,
    );
    expect(outcome).toBe("ok");
  });
});
