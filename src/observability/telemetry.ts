import {
  context,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Span,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import type { AuditSink } from "../audit/audit-event.js";
import { describeValue } from "../errors/civitas-error.js";
import type { JsonObject } from "../message/json.js";
import type { Logger } from "../logging/logger.js";
import { isoTime, type Clock } from "../time/clock.js";

/** The tracer name civitas-ts reports spans under. */
export const TRACER_NAME = "civitas-ts";

/** A span's remote parent, as carried in a message. */
export interface SpanParent {
  traceId: string;
  spanId: string;
}

/**
 * Spans and audit events for one runtime. When no tracer provider is given
 * and none is registered globally, and no audit sink is configured, every
 * call is a cheap no-op: the hot path pays nothing. Telemetry never throws
 * into user code; failures go to the logger.
 * @internal
 */
export class Telemetry {
  /** Whether spans are recorded at all. */
  readonly tracing: boolean;
  private readonly tracer: Tracer | undefined;

  constructor(
    tracerProvider: TracerProvider | undefined,
    private readonly auditSink: AuditSink | undefined,
    private readonly signerId: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    let tracer: Tracer | undefined;
    try {
      tracer = (tracerProvider ?? globalProvider())?.getTracer(TRACER_NAME);
    } catch (err) {
      // a broken provider turns tracing off; it must not keep the runtime from being built
      logger.warn("telemetry: could not get a tracer; tracing is off", { error: err });
      tracer = undefined;
    }
    this.tracer = tracer;
    this.tracing = tracer !== undefined;
  }

  /** Starts a span (a child of `parent` when given), or returns `undefined` when tracing is off. */
  startSpan(name: string, attributes: Attributes, parent?: SpanParent): Span | undefined {
    if (this.tracer === undefined) return undefined;
    try {
      const ctx =
        parent === undefined
          ? context.active()
          : trace.setSpanContext(ROOT_CONTEXT, {
              traceId: parent.traceId,
              spanId: parent.spanId,
              traceFlags: TraceFlags.SAMPLED,
              isRemote: true,
            });
      return this.tracer.startSpan(name, { attributes }, ctx);
    } catch (err) {
      this.logger.warn("telemetry: could not start span", { span: name, error: err });
      return undefined;
    }
  }

  /** Ends `span`, recording `error` on it when given. */
  endSpan(span: Span | undefined, error?: unknown): void {
    if (span === undefined) return;
    try {
      if (error !== undefined) {
        const message = error instanceof Error ? error.message : describeValue(error);
        span.recordException(error instanceof Error ? error : message);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      }
      span.end();
    } catch (err) {
      this.logger.warn("telemetry: could not end span", { error: err });
    }
  }

  /** Whether audit events go anywhere. */
  get auditing(): boolean {
    return this.auditSink !== undefined;
  }

  /** Emits an audit event; resolves when the sink accepted it. Never rejects: failures are logged and reported as `false`. */
  async audit(event: string, agent: string, details: JsonObject): Promise<boolean> {
    if (this.auditSink === undefined) return true;
    try {
      await this.auditSink.emit({ event, ts: isoTime(this.clock.now()), agent, signerId: this.signerId, details });
      return true;
    } catch (err) {
      this.logger.error("audit: the sink failed to record an event", { event, agent, error: err });
      return false;
    }
  }
}

/** The globally registered provider, or `undefined` when only the no-op one is there. */
function globalProvider(): TracerProvider | undefined {
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  const delegate = provider.getDelegate?.() ?? provider;
  return delegate.constructor.name === "NoopTracerProvider" ? undefined : provider;
}
