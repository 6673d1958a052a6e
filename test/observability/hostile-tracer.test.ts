/**
 * A hostile or broken tracer never throws into user code
 * (docs/observability.md: None of these can throw into your code).
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import type { Span, Tracer, TracerProvider } from "@opentelemetry/api";
import { describe, expect, it, afterEach } from "vitest";
import { AgentProcess, type Message } from "civitas-ts";
import { type Context } from "@opentelemetry/api";
import { ErrorAction, InMemoryStateStore, ProcessStatus, Runtime, silentLogger, type RuntimeOptions } from "../../src/index.js";
import { testTracing, type TestTracing } from "../support/tracing.js";
import { runtimes } from "../support/runtimes.js";

const runtime = runtimes({ stop: "full" });

async function eventually(condition: () => boolean, what = "condition", timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

class Recorder extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.handled.push(message);
  }
}

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
    const sink = new Recorder("sink");
    class Forwarder extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        await this.send("sink", { fwd: true });
        return this.reply({ ok: message.payload.n as number });
      }
    }
    const rt = runtime([new Forwarder("fwd"), sink], { tracerProvider: provider });
    await rt.start();
    const reply = await rt.ask("fwd", { n: 7 }, { timeoutMs: 1_000 });
    expect(reply.payload).toEqual({ ok: 7 });
    await eventually(() => sink.handled.length === 1, "the forwarded message");
  });
});

const started: Runtime[] = [];

const tracings: TestTracing[] = [];

function tracedRuntime(root: RuntimeOptions["root"], options: Partial<RuntimeOptions> = {}): Runtime {
  const rt = new Runtime({ root, logger: silentLogger, keepAlive: false, ...options });
  started.push(rt);
  return rt;
}

function tracing(): TestTracing {
  const t = testTracing();
  tracings.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((rt) => Promise.race([rt.stop(), new Promise((r) => setTimeout(r, 500))])));
  await Promise.all(tracings.splice(0).map((t) => t.close()));
});

/** Settles with "timeout" when `p` has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  return Promise.race([p, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms))]);
}

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
    const rt = tracedRuntime([new Idle("a")], { tracerProvider: hostile(t, ["setAttribute"]) });
    await rt.start();
    const outcome = await within(
      rt.suspend("a", "review").then(
        () => "ok",
        (e: unknown) => `rejected: ${(e as Error).message}`,
      ),
      1_000,
    );
    expect(outcome).toBe("ok");
    expect(rt.getAgent("a")!.status).toBe(ProcessStatus.SUSPENDED);
  });

  it("runtime.suspend resolves when the store fails and the suspend span's addEvent throws (degraded durability)", async () => {
    const t = tracing();
    const rt = tracedRuntime([new Idle("a")], { tracerProvider: hostile(t, ["addEvent"]), store: new FailingSetStore() });
    await rt.start();
    const outcome = await within(
      rt.suspend("a", "review").then(
        () => "ok",
        (e: unknown) => `rejected: ${(e as Error).message}`,
      ),
      1_000,
    );
    expect(outcome).toBe("ok");
  });

  it("a failed handle span is still ended when the span's recordException throws", async () => {
    const t = tracing();
    const agent = new AlwaysFails("a");
    const rt = tracedRuntime([agent], { tracerProvider: hostile(t, ["recordException"]) });
    await rt.start();
    await rt.send("a", {}, { type: "job" });
    // give the loop time to handle and end the span
    await new Promise((r) => setTimeout(r, 50));
    expect(t.named("civitas.agent.handle")).toHaveLength(1);
  });
});
