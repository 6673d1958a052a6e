/**
 * Spans: a failed start still records civitas.agent.stop, and a retry span
 * belongs to its message's trace.
 *
 * Each test pins a defect found by the review of spans, audit events and
 * runtime events (these tests were in test/review/observability-
 * review.test.ts).
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, type Message } from "../../src/index.js";
import { gate } from "../support/agents.js";
import { FailsToStart } from "../support/probe-agents.js";
import { tracedRuntimes } from "../support/tracing.js";
import { whenStarted, until } from "../support/runtimes.js";

const { runtime: tracedRuntime, tracing } = tracedRuntimes();

/** A real async context manager, as the OpenTelemetry Node SDK registers. */
class AlsContextManager implements ContextManager {
  private readonly als = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.als.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.als.disable();
    return this;
  }
}

describe("span lifecycle", () => {
  it("a failed start records civitas.agent.stop (docs: civitas.agent.stop at each stop or crash: onStop)", async () => {
    const t = tracing();
    const agent = new FailsToStart("a");
    const rt = tracedRuntime([agent], { tracerProvider: t.provider });
    await rt.start().catch(() => undefined);
    expect(agent.stopCount).toBe(1);
    expect(t.named("civitas.agent.start")).toHaveLength(1);
    expect(t.named("civitas.agent.stop")).toHaveLength(1);
  });
});

describe("span parents", () => {
  it("the civitas.agent.retry span of a message belongs to that message's trace, not to an unrelated caller's", async () => {
    const t = tracing();
    const slow = gate();
    const attempts: number[] = [];
    class Worker extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        if (message.type === "slow") {
          await slow.promise;
          return;
        }
        attempts.push(message.attempt);
        if (message.attempt === 0) throw new Error("first attempt fails");
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const rt = await whenStarted(tracedRuntime([new Worker("w")], { tracerProvider: t.provider }));
    const manager = new AlsContextManager();
    expect(context.setGlobalContextManager(manager)).toBe(true);
    const callerTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const caller = trace.setSpanContext(ROOT_CONTEXT, { traceId: callerTraceId, spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true });
    try {
      // an HTTP request's span wakes the agent's loop ...
      await context.with(caller, () => rt.send("w", {}, { type: "slow" }));
      // ... and a later, unrelated message (sent outside any span) fails and is retried on that loop
      await rt.send("w", {}, { type: "job" });
      slow.open();
      await until(() => attempts.length === 2, "the retry", 2_000, 5);
      await until(() => t.named("civitas.agent.handle").length === 3, "three handle spans", 2_000, 5);
    } finally {
      context.disable();
    }
    const [retry] = t.named("civitas.agent.retry");
    const failed = t.named("civitas.agent.handle").find((s) => s.attributes["civitas.message.type"] === "job" && s.attributes["civitas.message.attempt"] === 0)!;
    expect(retry).toBeDefined();
    expect(retry!.spanContext().traceId).not.toBe(callerTraceId);
    expect(retry!.spanContext().traceId).toBe(failed.spanContext().traceId);
  });
});
