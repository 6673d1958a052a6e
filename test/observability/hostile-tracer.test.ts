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
import { runtimes } from "../support/review-kit.js";

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
