/**
 * A hostile or broken tracer never throws into user code
 * (docs/observability.md: None of these can throw into your code).
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import type { Span, Tracer, TracerProvider } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { AgentProcess, type Message } from "civitas-ts";
import { type Context } from "@opentelemetry/api";
import { ErrorAction, InMemoryStateStore, ProcessStatus } from "../../src/index.js";
import { tracedRuntimes, type TestTracing } from "../support/tracing.js";
import { runtimes, whenStarted, until } from "../support/runtimes.js";
import { settlement } from "../support/outcome.js";
import { Sink } from "../support/probe-agents.js";

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- telemetry
describe("telemetry never throws into user code", () => {
  it("a span whose spanContext() throws does not break send/reply inside handle()", async () => {
    const broken = {
      spanContext: () => {
        throw new Error("spanContext exploded");
      },
      end: () => undefined,
      setStatus: () => undefined,
      recordException: () => undefined,
      setAttribute: () => undefined,
      addEvent: () => undefined,
    } as unknown as Span;
    const provider: TracerProvider = { getTracer: () => ({ startSpan: () => broken }) as unknown as Tracer };
    const sink = new Sink("sink");
    class Forwarder extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        await this.send("sink", { fwd: true });
        return this.reply({ ok: message.payload.n as number });
      }
    }
    const rt = await whenStarted(runtime([new Forwarder("fwd"), sink], { tracerProvider: provider }));
    const reply = await rt.ask("fwd", { n: 7 }, { timeoutMs: 1_000 });
    expect(reply.payload).toEqual({ ok: 7 });
    await until(() => sink.seen.length === 1, "the forwarded message", 3_000, 2);
  });
});

const { runtime: tracedRuntime, tracing } = tracedRuntimes();

/** A provider over a real SDK tracer whose spans have some methods replaced by throwing ones. */
function hostile(real: TestTracing, broken: readonly (keyof Span)[]): TracerProvider {
  const tracer = real.provider.getTracer("civitas-ts");
  const wrap = (span: Span): Span =>
    new Proxy(span, {
      get(target, prop, receiver) {
        if ((broken as readonly PropertyKey[]).includes(prop)) {
          return () => {
            throw new Error(`${String(prop)} exploded`);
          };
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const hostileTracer = {
    startSpan: (name: string, options?: unknown, ctx?: Context) => wrap(tracer.startSpan(name, options as never, ctx)),
    startActiveSpan: () => {
      throw new Error("not used");
    },
  } as unknown as Tracer;
  return { getTracer: () => hostileTracer };
}

class Idle extends AgentProcess {
  override async handle(): Promise<void> {}
}

class AlwaysFails extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("nope");
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.SKIP;
  }
}

/** A store whose set fails: every persist is refused. */
class FailingSetStore extends InMemoryStateStore {
  override async set(): Promise<void> {
    throw new Error("store down");
  }
}

describe("a hostile tracer never throws into user code", () => {
  it("runtime.suspend resolves when the suspend span's setAttribute throws", async () => {
    const t = tracing();
    const rt = await whenStarted(tracedRuntime([new Idle("a")], { tracerProvider: hostile(t, ["setAttribute"]) }));
    expect(await settlement(rt.suspend("a", "review"), 1_000)).toBe("resolved");
    expect(rt.getAgent("a")!.status).toBe(ProcessStatus.SUSPENDED);
  });

  it("runtime.suspend resolves when the store fails and the suspend span's addEvent throws (degraded durability)", async () => {
    const t = tracing();
    const rt = await whenStarted(tracedRuntime([new Idle("a")], { tracerProvider: hostile(t, ["addEvent"]), store: new FailingSetStore() }));
    expect(await settlement(rt.suspend("a", "review"), 1_000)).toBe("resolved");
  });

  it("a failed handle span is still ended when the span's recordException throws", async () => {
    const t = tracing();
    const agent = new AlwaysFails("a");
    const rt = await whenStarted(tracedRuntime([agent], { tracerProvider: hostile(t, ["recordException"]) }));
    await rt.send("a", {}, { type: "job" });
    // give the loop time to handle and end the span
    await new Promise((r) => setTimeout(r, 50));
    expect(t.named("civitas.agent.handle")).toHaveLength(1);
  });
});
