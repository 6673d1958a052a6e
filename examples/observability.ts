/**
 * What a runtime reports: OpenTelemetry spans (here collected in memory with
 * @opentelemetry/sdk-trace-base), audit events (MemoryAuditSink) and runtime
 * events. A front agent asks a back agent, so the trace context travels in
 * the messages; the back agent fails once (RETRY), then crashes and is
 * restarted by its supervisor.
 *
 * Run it with `npx tsx examples/observability.ts` (in your own project,
 * `npm install @opentelemetry/sdk-trace-base` first).
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { AgentProcess, ErrorAction, MemoryAuditSink, ProcessStatus, Runtime, Supervisor, silentLogger, type Message } from "civitas-ts";

class Front extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const answer = await this.ask("back", message.payload, { timeoutMs: 2000 });
    return this.reply(answer.payload);
  }
}

class Back extends AgentProcess {
  private failures = 0;

  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.crash === true) throw new Error("asked to crash");
    if (message.payload.flaky === true && this.failures++ === 0) throw new Error("transient failure");
    return this.reply({ ok: true, attempt: message.attempt });
  }

  override async onError(error: unknown): Promise<ErrorAction> {
    return error instanceof Error && error.message === "transient failure" ? ErrorAction.RETRY : ErrorAction.ESCALATE;
  }
}

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const audit = new MemoryAuditSink();

const runtime = new Runtime({
  root: new Supervisor("root", { backoffBaseMs: 20, children: [new Front("front"), new Back("back")] }),
  tracerProvider,
  auditSink: audit,
  signerId: "example-runtime",
  logger: silentLogger,
});
runtime.on("agent.status", (agent, from, to) => console.log(`  event agent.status: ${agent} ${from} -> ${to}`));

await runtime.start();

console.log("ask front, which asks back (back fails once and retries)");
const reply = await runtime.ask("front", { flaky: true });
console.log(`  reply: ${JSON.stringify(reply.payload)}`);

console.log("crash back; root restarts it");
const restarted = new Promise<void>((resolve) => {
  runtime.on("agent.status", (agent, _from, to) => {
    if (agent === "back" && to === ProcessStatus.RUNNING) resolve();
  });
});
await runtime.send("back", { crash: true });
await restarted; // the running runtime keeps the process alive meanwhile (keepAlive)

await runtime.stop();

const spans = exporter.getFinishedSpans();
console.log("spans:");
for (const span of spans) {
  const attributes = Object.entries(span.attributes)
    .filter(([key]) => key !== "civitas.message.id")
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(" ");
  console.log(`  ${span.name} ${attributes}`);
}

const handles = spans.filter((s) => s.name === "civitas.agent.handle");
const frontHandle = handles.find((s) => s.attributes["civitas.agent.name"] === "front");
const backHandle = handles.find((s) => s.attributes["civitas.agent.name"] === "back");
if (frontHandle !== undefined && backHandle !== undefined) {
  const sameTrace = frontHandle.spanContext().traceId === backHandle.spanContext().traceId;
  console.log(`trace context: back's handle span is in front's trace: ${sameTrace}; its parent is front's handle span: ${parentOf(backHandle) === frontHandle.spanContext().spanId}`);
}

console.log("audit events:");
for (const event of audit.events) {
  console.log(`  ${event.event} ${event.agent} signer=${event.signerId} ${JSON.stringify(event.details)}`);
}

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
