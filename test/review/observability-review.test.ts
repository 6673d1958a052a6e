/**
 * Adversarial review of observability (spans, audit events, runtime events):
 * each test pins a behaviour docs/observability.md or SPEC promises and the
 * current code does not deliver.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager, type Span, type Tracer, type TracerProvider } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  ErrorAction,
  InMemoryStateStore,
  ProcessStatus,
  Runtime,
  silentLogger,
  type AuditSink,
  type Message,
  type RuntimeOptions,
} from "../../src/index.js";
import { testTracing, type TestTracing } from "../support/tracing.js";

const runtimes: Runtime[] = [];
const tracings: TestTracing[] = [];

function runtime(root: RuntimeOptions["root"], options: Partial<RuntimeOptions> = {}): Runtime {
  const rt = new Runtime({ root, logger: silentLogger, keepAlive: false, ...options });
  runtimes.push(rt);
  return rt;
}

function tracing(): TestTracing {
  const t = testTracing();
  tracings.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => Promise.race([rt.stop(), new Promise((r) => setTimeout(r, 500))])));
  await Promise.all(tracings.splice(0).map((t) => t.close()));
});

async function eventually(check: () => boolean, what: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

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

describe("a hostile tracer never throws into user code (docs: 'None of these can throw into your code')", () => {
  it("runtime.suspend resolves when the suspend span's setAttribute throws", async () => {
    const t = tracing();
    const rt = runtime([new Idle("a")], { tracerProvider: hostile(t, ["setAttribute"]) });
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
    const rt = runtime([new Idle("a")], { tracerProvider: hostile(t, ["addEvent"]), store: new FailingSetStore() });
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
    const rt = runtime([agent], { tracerProvider: hostile(t, ["recordException"]) });
    await rt.start();
    await rt.send("a", {}, { type: "job" });
    // give the loop time to handle and end the span
    await new Promise((r) => setTimeout(r, 50));
    expect(t.named("civitas.agent.handle")).toHaveLength(1);
  });
});

describe("span lifecycle", () => {
  it("a failed start records civitas.agent.stop (docs: civitas.agent.stop at each stop or crash: onStop)", async () => {
    const t = tracing();
    let onStopRan = 0;
    class FailsToStart extends AgentProcess {
      override async onStart(): Promise<void> {
        throw new Error("cannot start");
      }
      override async onStop(): Promise<void> {
        onStopRan++;
      }
    }
    const rt = runtime([new FailsToStart("a")], { tracerProvider: t.provider });
    await rt.start().catch(() => undefined);
    expect(onStopRan).toBe(1);
    expect(t.named("civitas.agent.start")).toHaveLength(1);
    expect(t.named("civitas.agent.stop")).toHaveLength(1);
  });
});

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

describe("span parents", () => {
  it("the civitas.agent.retry span of a message belongs to that message's trace, not to an unrelated caller's", async () => {
    const t = tracing();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const attempts: number[] = [];
    class Worker extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        if (message.type === "slow") {
          await gate;
          return;
        }
        attempts.push(message.attempt);
        if (message.attempt === 0) throw new Error("first attempt fails");
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const rt = runtime([new Worker("w")], { tracerProvider: t.provider });
    await rt.start();
    const manager = new AlsContextManager();
    expect(context.setGlobalContextManager(manager)).toBe(true);
    const callerTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const caller = trace.setSpanContext(ROOT_CONTEXT, { traceId: callerTraceId, spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true });
    try {
      // an HTTP request's span wakes the agent's loop ...
      await context.with(caller, () => rt.send("w", {}, { type: "slow" }));
      // ... and a later, unrelated message (sent outside any span) fails and is retried on that loop
      await rt.send("w", {}, { type: "job" });
      release();
      await eventually(() => attempts.length === 2, "the retry");
      await eventually(() => t.named("civitas.agent.handle").length === 3, "three handle spans");
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

describe("a never-settling audit sink", () => {
  const hanging: AuditSink = { emit: () => new Promise<void>(() => undefined) };

  it("does not hang runtime.suspend (docs: a failing sink is logged and the runtime carries on)", async () => {
    const rt = runtime([new Idle("a", { shutdownTimeoutMs: 200 })], { auditSink: hanging }); // the receipt waits at most this long
    await rt.start();
    const outcome = await within(
      rt.suspend("a", "review").then(() => "ok"),
      1_000,
    );
    expect(outcome).toBe("ok");
  });
});

