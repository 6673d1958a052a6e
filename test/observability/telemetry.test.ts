import {
  context,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type ContextManager,
  type Span,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Telemetry } from "../../src/observability/telemetry.js";
import {
  AgentProcess,
  ErrorAction,
  Runtime,
  silentLogger,
  Supervisor,
  systemClock,
  createMessage,
  type Logger,
  type Message,
  type RuntimeOptions,
} from "../../src/index.js";
import { AlwaysOffSampler, ParentBasedSampler, SamplingDecision, type Sampler } from "@opentelemetry/sdk-trace-base";
import { fromWire, toWire } from "../../src/index.js";
import { Echo, eventually, Silent } from "../runtime/fixtures.js";
import { parentSpanId, testTracing, type TestTracing } from "../support/tracing.js";

const runtimes: Runtime[] = [];
const tracings: TestTracing[] = [];

function traced(root: RuntimeOptions["root"], sampler?: Sampler): { rt: Runtime; tracing: TestTracing } {
  const tracing = testTracing(sampler);
  tracings.push(tracing);
  const rt = new Runtime({ root, logger: silentLogger, tracerProvider: tracing.provider });
  runtimes.push(rt);
  return { rt, tracing };
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
  await Promise.all(tracings.splice(0).map((t) => t.close()));
  vi.restoreAllMocks();
});

/** Fails the first attempt of each message, then succeeds; asks for a retry. */
class FlakyOnce extends AgentProcess {
  readonly attempts: number[] = [];
  override async handle(message: Message): Promise<void> {
    this.attempts.push(message.attempt);
    if (message.attempt === 0) throw new Error("first attempt fails");
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.RETRY;
  }
}

/** Crashes (escalates) on a message of type "crash". */
class Crashy extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    if (message.type === "crash") throw new Error("boom");
  }
}

describe("spans", () => {
  it("records civitas.agent.start, civitas.agent.handle and civitas.agent.stop with their attributes", async () => {
    const { rt, tracing } = traced([new Echo("echo")]);
    await rt.start();
    const start = tracing.named("civitas.agent.start");
    expect(start).toHaveLength(1);
    expect(start[0]?.attributes["civitas.agent.name"]).toBe("echo");

    await rt.ask("echo", { n: 1 }, { type: "greet" });
    const handle = tracing.named("civitas.agent.handle");
    expect(handle).toHaveLength(1);
    expect(handle[0]?.attributes["civitas.agent.name"]).toBe("echo");
    expect(handle[0]?.attributes["civitas.message.type"]).toBe("greet");
    expect(handle[0]?.attributes["civitas.message.attempt"]).toBe(0);
    expect(handle[0]?.status.code).not.toBe(SpanStatusCode.ERROR);

    expect(tracing.named("civitas.agent.stop")).toHaveLength(0);
    await rt.stop();
    const stop = tracing.named("civitas.agent.stop");
    expect(stop).toHaveLength(1);
    expect(stop[0]?.attributes["civitas.agent.name"]).toBe("echo");
  });

  it("records civitas.agent.retry when onError returns RETRY, and marks the failed handle span as an error", async () => {
    const flaky = new FlakyOnce("flaky");
    const { rt, tracing } = traced([flaky]);
    await rt.start();
    await rt.send("flaky", {}, { type: "job" });
    await eventually(() => flaky.attempts.length === 2, "the retry to be handled");
    expect(flaky.attempts).toEqual([0, 1]);
    await eventually(() => tracing.named("civitas.agent.handle").length === 2, "both handle spans");

    const retry = tracing.named("civitas.agent.retry");
    expect(retry).toHaveLength(1);
    expect(retry[0]?.attributes["civitas.agent.name"]).toBe("flaky");
    expect(retry[0]?.attributes["civitas.message.attempt"]).toBe(1);

    const handles = tracing.named("civitas.agent.handle");
    expect(handles.map((s) => s.attributes["civitas.message.attempt"])).toEqual([0, 1]);
    expect(handles[0]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(handles[0]?.status.message).toBe("first attempt fails");
    expect(handles[0]?.events.some((e) => e.name === "exception")).toBe(true);
    expect(handles[1]?.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("records civitas.supervisor.restart when a supervisor restarts a crashed child", async () => {
    const crashy = new Crashy("crashy");
    const { rt, tracing } = traced(new Supervisor("sup", { children: [crashy], backoffBaseMs: 0 }));
    await rt.start();
    await rt.send("crashy", {}, { type: "crash" });
    await eventually(() => tracing.named("civitas.supervisor.restart").length === 1, "the restart span");
    const [restart] = tracing.named("civitas.supervisor.restart");
    expect(restart?.attributes["civitas.supervisor.name"]).toBe("sup");
    expect(restart?.attributes["civitas.agent.name"]).toBe("crashy");
    expect(restart?.attributes["civitas.supervisor.strategy"]).toBe("ONE_FOR_ONE");
    expect(crashy.incarnation).toBe(2);
    expect(tracing.named("civitas.agent.start")).toHaveLength(2);
  });
});

/** Forwards each message to `next` (when given) and records what it handled. */
class Relay extends AgentProcess {
  static readonly seen: Message[] = [];
  constructor(
    name: string,
    private readonly next: string | undefined,
  ) {
    super(name);
  }
  override async handle(message: Message): Promise<void> {
    if (this.next !== undefined) await this.send(this.next, message.payload);
    Relay.seen.push(message);
  }
}

/** A synchronous context manager: enough for `context.with` around a call that reads the active span before it returns. */
class StackContextManager implements ContextManager {
  private readonly stack: Context[] = [];
  active(): Context {
    return this.stack.at(-1) ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    this.stack.push(ctx);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.stack.pop();
    }
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.stack.length = 0;
    return this;
  }
}

/** The trace flags each agent's message arrived with. */
function flagsByRecipient(messages: readonly Message[]): Record<string, number | undefined> {
  return Object.fromEntries(messages.map((m) => [m.recipient, m.traceFlags]));
}

function relayChain(): AgentProcess[] {
  Relay.seen.length = 0;
  return [new Relay("a", "b"), new Relay("b", "c"), new Relay("c", undefined)];
}

describe("trace context", () => {
  it("makes the receiver's handle span a child of the sender's handle span, in the same trace", async () => {
    const { rt, tracing } = traced(relayChain());
    await rt.start();
    await rt.send("a", { hop: 1 });
    await eventually(() => Relay.seen.some((m) => m.recipient === "c"), "the message to reach c");
    await eventually(() => tracing.named("civitas.agent.handle").length === 3, "three handle spans");

    const byAgent = (name: string) => tracing.named("civitas.agent.handle").find((s) => s.attributes["civitas.agent.name"] === name);
    const [a, b, c] = [byAgent("a"), byAgent("b"), byAgent("c")];
    expect(a && b && c).toBeTruthy();
    expect(parentSpanId(b!)).toBe(a!.spanContext().spanId);
    expect(parentSpanId(c!)).toBe(b!.spanContext().spanId);
    expect(b!.spanContext().traceId).toBe(a!.spanContext().traceId);
    expect(c!.spanContext().traceId).toBe(a!.spanContext().traceId);
    // each hop is a distinct span
    expect(new Set([a, b, c].map((s) => s!.spanContext().spanId)).size).toBe(3);
  });

  it("continues the trace through an ask inside handle", async () => {
    class Asker extends AgentProcess {
      override async handle(): Promise<Message> {
        const answer = await this.ask("echo", { q: 1 }, { timeoutMs: 5_000 });
        return this.reply({ answer: answer.payload });
      }
    }
    const { rt, tracing } = traced([new Asker("asker"), new Echo("echo")]);
    await rt.start();
    await rt.ask("asker", {});
    const handles = tracing.named("civitas.agent.handle");
    const asker = handles.find((s) => s.attributes["civitas.agent.name"] === "asker");
    const echo = handles.find((s) => s.attributes["civitas.agent.name"] === "echo");
    expect(parentSpanId(echo!)).toBe(asker!.spanContext().spanId);
    expect(echo!.spanContext().traceId).toBe(asker!.spanContext().traceId);
  });
});

/** Samples root spans of handling by agent "a" only; children follow their parent (via ParentBasedSampler). */
const rootsOfA: Sampler = {
  shouldSample: (_context, _traceId, _name, _kind, attributes) => ({
    decision: attributes["civitas.agent.name"] === "a" ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
  }),
  toString: () => "rootsOfA",
};

describe("sampling", () => {
  it("records no handle span under ParentBased(AlwaysOff) for messages sent outside any span", async () => {
    const { rt, tracing } = traced(relayChain(), new ParentBasedSampler({ root: new AlwaysOffSampler() }));
    await rt.start();
    await rt.send("a", { hop: 1 });
    await eventually(() => Relay.seen.some((m) => m.recipient === "c"), "the message to reach c");
    await rt.stop();
    expect(tracing.named("civitas.agent.handle")).toEqual([]);
    // the message from outside carries no flags; the ones sent from (unsampled) handle spans say "not sampled"
    expect(flagsByRecipient(Relay.seen)).toEqual({ a: undefined, b: 0, c: 0 });
  });

  it("follows the first agent's sampling decision down the chain, whichever it is", async () => {
    const { rt, tracing } = traced(relayChain(), new ParentBasedSampler({ root: rootsOfA }));
    await rt.start();
    await rt.send("a", { trace: "sampled" });
    await eventually(() => tracing.named("civitas.agent.handle").length === 3, "three sampled handle spans");
    const sampled = tracing.named("civitas.agent.handle");
    expect(new Set(sampled.map((s) => s.spanContext().traceId)).size).toBe(1);

    await rt.send("b", { trace: "unsampled" });
    await eventually(() => Relay.seen.filter((m) => m.payload.trace === "unsampled").length === 2, "the unsampled chain to reach c");
    await rt.stop();
    // b's root span was not sampled, so c's child span is not either
    expect(tracing.named("civitas.agent.handle")).toHaveLength(3);
    expect(flagsByRecipient(Relay.seen.filter((m) => m.payload.trace === "sampled"))).toEqual({ a: undefined, b: 1, c: 1 });
    expect(flagsByRecipient(Relay.seen.filter((m) => m.payload.trace === "unsampled"))).toEqual({ b: undefined, c: 0 });
  });

  it("starts a new trace (a root span, not an orphan) for a message sent outside any span", async () => {
    const { rt, tracing } = traced(relayChain());
    await rt.start();
    await rt.send("a", {});
    await eventually(() => tracing.named("civitas.agent.handle").length === 3, "three handle spans");
    const byAgent = (name: string) => tracing.named("civitas.agent.handle").find((s) => s.attributes["civitas.agent.name"] === name)!;
    expect(parentSpanId(byAgent("a"))).toBeUndefined();
    expect(parentSpanId(byAgent("b"))).toBe(byAgent("a").spanContext().spanId);
    // what b received names a's handle span as its sender, and carries no parent for it
    const toB = Relay.seen.find((m) => m.recipient === "b")!;
    expect(toB.spanId).toBe(byAgent("a").spanContext().spanId);
    expect(toB.traceId).toBe(byAgent("a").spanContext().traceId);
    expect(toB.parentSpanId).toBeUndefined();
    const toC = Relay.seen.find((m) => m.recipient === "c")!;
    expect(toC.parentSpanId).toBe(toB.spanId);
  });

  it("joins the span active where runtime.send is called, and follows its sampling decision", async () => {
    const { rt, tracing } = traced(relayChain());
    await rt.start();
    const manager = new StackContextManager();
    expect(context.setGlobalContextManager(manager)).toBe(true);
    const caller = (traceFlags: number) => trace.setSpanContext(ROOT_CONTEXT, { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags, isRemote: true });
    try {
      await context.with(caller(TraceFlags.SAMPLED), () => rt.send("a", { caller: "sampled" }));
      await context.with(caller(TraceFlags.NONE), () => rt.send("a", { caller: "unsampled" }));
    } finally {
      context.disable();
    }
    await eventually(() => Relay.seen.length === 6, "both chains to reach c");
    await rt.stop();
    const spans = tracing.named("civitas.agent.handle");
    expect(spans).toHaveLength(3);
    for (const span of spans) expect(span.spanContext().traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    const a = spans.find((span) => span.attributes["civitas.agent.name"] === "a")!;
    expect(parentSpanId(a)).toBe("00f067aa0ba902b7");
    expect(flagsByRecipient(Relay.seen.filter((m) => m.payload.caller === "unsampled"))).toEqual({ a: 0, b: 0, c: 0 });
  });

  it("continues a remote sender's trace from a wire message's trace_flags, and honours 'not sampled'", async () => {
    const { rt, tracing } = traced([new Relay("c", undefined)]);
    Relay.seen.length = 0;
    await rt.start();
    const remote = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" };
    const wire = (flags: number | undefined, n: number) => {
      const w: Record<string, unknown> = { ...toWire(createMessage({ sender: "remote", recipient: "c", payload: { n }, ...remote })) };
      if (flags !== undefined) w.trace_flags = flags;
      return fromWire(JSON.stringify(w));
    };
    const c = rt.getAgent("c")!;
    await c.mailbox.put(wire(1, 1));
    await c.mailbox.put(wire(0, 2));
    await c.mailbox.put(wire(undefined, 3));
    await eventually(() => Relay.seen.length === 3, "three messages handled");
    await rt.stop();
    const spans = tracing.named("civitas.agent.handle");
    expect(spans).toHaveLength(2);
    const [continued, fresh] = spans;
    expect(continued!.spanContext().traceId).toBe(remote.traceId);
    expect(parentSpanId(continued!)).toBe(remote.spanId);
    // no flags: the ids name no span this process can vouch for, so a new trace starts
    expect(fresh!.spanContext().traceId).not.toBe(remote.traceId);
    expect(parentSpanId(fresh!)).toBeUndefined();
  });
});

describe("telemetry never throws into user code", () => {
  function throwingTracer(): Tracer {
    return {
      startSpan: () => {
        throw new Error("tracer exploded");
      },
      startActiveSpan: () => {
        throw new Error("tracer exploded");
      },
    };
  }

  function warningsOf(): { logger: Logger; warnings: string[] } {
    const warnings: string[] = [];
    return { logger: { ...silentLogger, warn: (message) => warnings.push(message) }, warnings };
  }

  it("keeps handling messages when the tracer throws on startSpan", async () => {
    const { logger, warnings } = warningsOf();
    const provider: TracerProvider = { getTracer: () => throwingTracer() };
    const crashy = new Crashy("crashy");
    const flaky = new FlakyOnce("flaky");
    const rt = new Runtime({ root: new Supervisor("sup", { children: [new Echo("echo"), crashy, flaky], backoffBaseMs: 0 }), logger, tracerProvider: provider });
    runtimes.push(rt);
    await rt.start();
    expect((await rt.ask("echo", { ok: 1 })).payload).toEqual({ ok: 1, from: "echo" });
    await rt.send("flaky", {});
    await eventually(() => flaky.attempts.length === 2, "the retry");
    await rt.send("crashy", {}, { type: "crash" });
    await eventually(() => crashy.incarnation === 2, "the restart");
    expect(warnings.some((w) => w.includes("could not start span"))).toBe(true);
  });

  it("keeps handling messages when spans throw on end, setStatus and recordException", async () => {
    const broken = {
      spanContext: () => ({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 }),
      end: () => {
        throw new Error("end exploded");
      },
      setStatus: () => {
        throw new Error("setStatus exploded");
      },
      recordException: () => {
        throw new Error("recordException exploded");
      },
    } as unknown as Span;
    const provider: TracerProvider = { getTracer: () => ({ startSpan: () => broken }) as unknown as Tracer };
    const flaky = new FlakyOnce("flaky");
    const rt = new Runtime({ root: [new Echo("echo"), flaky], logger: silentLogger, tracerProvider: provider });
    runtimes.push(rt);
    await rt.start();
    expect((await rt.ask("echo", { ok: 2 })).payload).toEqual({ ok: 2, from: "echo" });
    await rt.send("flaky", {});
    await eventually(() => flaky.attempts.length === 2, "the retry");
    await rt.stop();
    expect(flaky.status).toBe("STOPPED");
  });

  it("builds and runs the runtime when the provider's getTracer throws, with tracing off", async () => {
    const { logger, warnings } = warningsOf();
    const provider: TracerProvider = {
      getTracer: () => {
        throw new Error("no tracer for you");
      },
    };
    const telemetry = new Telemetry(provider, undefined, "signer", systemClock, logger);
    expect(telemetry.tracing).toBe(false);
    expect(warnings).toHaveLength(1);
    const rt = new Runtime({ root: [new Echo("echo")], logger: silentLogger, tracerProvider: provider });
    runtimes.push(rt);
    await rt.start();
    expect((await rt.ask("echo", { ok: 3 })).payload).toEqual({ ok: 3, from: "echo" });
  });
});

describe("without a tracer provider", () => {
  it("Telemetry reports tracing off and starts no spans", () => {
    const telemetry = new Telemetry(undefined, undefined, "signer", systemClock, silentLogger);
    expect(telemetry.tracing).toBe(false);
    expect(telemetry.startSpan("x", {})).toBeUndefined();
    expect(telemetry.startMessageSpan("x", {}, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 })).toBeUndefined();
    expect(() => telemetry.endSpan(undefined, new Error("e"))).not.toThrow();
  });

  it("does no span work while handling messages", async () => {
    const setSpanContext = vi.spyOn(trace, "setSpanContext");
    const rt = new Runtime({ root: [new Echo("echo"), new Silent("silent")], logger: silentLogger });
    runtimes.push(rt);
    await rt.start();
    await rt.ask("echo", { n: 1 });
    await rt.send("silent", {});
    await eventually(() => (rt.getAgent("silent") as Silent).handled.length === 1, "the send");
    await rt.stop();
    expect(setSpanContext).not.toHaveBeenCalled();
  });

  it("uses the globally registered provider when none is given", async () => {
    const tracing = testTracing();
    tracings.push(tracing);
    expect(trace.setGlobalTracerProvider(tracing.provider)).toBe(true);
    try {
      const telemetry = new Telemetry(undefined, undefined, "signer", systemClock, silentLogger);
      expect(telemetry.tracing).toBe(true);
      const rt = new Runtime({ root: [new Echo("echo")], logger: silentLogger });
      runtimes.push(rt);
      await rt.start();
      await rt.ask("echo", {});
      expect(tracing.named("civitas.agent.handle")).toHaveLength(1);
    } finally {
      trace.disable();
    }
    expect(new Telemetry(undefined, undefined, "signer", systemClock, silentLogger).tracing).toBe(false);
  });
});
