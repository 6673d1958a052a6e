import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { anchorOf, type AuditAnchor } from "../audit/audit-anchor.js";
import type { AuditEvent, AuditSink } from "../audit/audit-event.js";
import { describeValue } from "../errors/civitas-error.js";
import { StateFencedError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import type { Logger } from "../logging/logger.js";
import { isoTime, type Clock } from "../time/clock.js";

/** The tracer name civitas-ts reports spans under. */
export const TRACER_NAME = "civitas-ts";

/** The trace context a message carries: what {@link Telemetry.startMessageSpan} continues. */
export interface MessageTraceContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags?: number | null | undefined;
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
  /** Waits handed to {@link Telemetry.track} that have not settled yet. */
  private readonly tracked = new Set<Promise<void>>();
  private readonly tracer: Tracer | undefined;

  constructor(
    tracerProvider: TracerProvider | undefined,
    private readonly auditSink: AuditSink | undefined,
    private readonly signerId: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The fence of the runtime's store (`PostgresStateStore.fenced`), stamped on every receipt as `details.fence`; `undefined` for an unfenced store. */
    private readonly ownerFence?: number,
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

  /**
   * Starts a lifecycle span (start, stop, restart, suspend, resume) as the
   * root of its own trace, or returns `undefined` when tracing is off. Not a
   * child of the active context: the runtime does this work in whatever async
   * context woke it, which may be an unrelated caller's.
   */
  startSpan(name: string, attributes: Attributes): Span | undefined {
    return this.start(name, { attributes, root: true });
  }

  /**
   * Starts the span of handling `message`, or returns `undefined` when
   * tracing is off. When the message carries trace flags, its sending span
   * is the remote parent, so the tracer's sampler follows that span's
   * decision (a `ParentBased` sampler records the child only when the parent
   * was sampled). Without flags the message was sent outside any span, its
   * ids were minted for correlation only and name no span: the handle span
   * is then the root of a new trace, sampled as a root.
   */
  startMessageSpan(name: string, attributes: Attributes, message: MessageTraceContext): Span | undefined {
    if (this.tracer === undefined) return undefined;
    const traceFlags = message.traceFlags;
    if (traceFlags === undefined || traceFlags === null) return this.start(name, { attributes, root: true });
    return this.start(name, { attributes }, trace.setSpanContext(ROOT_CONTEXT, { traceId: message.traceId, spanId: message.spanId, traceFlags, isRemote: true }));
  }

  /**
   * Starts a span as a child of `parent`, a span this runtime started (it may
   * have ended: a retry is the child of the failed handle span), or, without
   * one, as {@link Telemetry.startMessageSpan} would for `message`. Returns
   * `undefined` when tracing is off.
   */
  startChildSpan(name: string, attributes: Attributes, parent: Span | undefined, message: MessageTraceContext): Span | undefined {
    if (this.tracer === undefined) return undefined;
    if (parent === undefined) return this.startMessageSpan(name, attributes, message);
    return this.start(name, { attributes }, trace.setSpan(ROOT_CONTEXT, parent));
  }

  /** The one place spans are started: a tracer that throws is logged, and no span is made. */
  private start(name: string, options: SpanOptions, parent?: Context): Span | undefined {
    if (this.tracer === undefined) return undefined;
    try {
      return this.tracer.startSpan(name, options, parent);
    } catch (err) {
      this.logger.warn("telemetry: could not start span", { span: name, error: err });
      return undefined;
    }
  }

  /** Ends `span`, recording `error` on it when given; a span whose recording throws is still ended. */
  endSpan(span: Span | undefined, error?: unknown): void {
    if (span === undefined) return;
    if (error !== undefined) {
      const message = error instanceof Error ? error.message : describeValue(error);
      this.guard("record an error on a span", () => span.recordException(error instanceof Error ? error : message));
      this.guard("record an error on a span", () => span.setStatus({ code: SpanStatusCode.ERROR, message }));
    }
    this.guard("end span", () => span.end());
  }

  /** Sets an attribute on `span` (when tracing); never throws. */
  setAttribute(span: Span | undefined, key: string, value: string | number | boolean): void {
    if (span !== undefined) this.guard("set a span attribute", () => span.setAttribute(key, value));
  }

  /** Adds an event to `span` (when tracing); never throws. */
  addEvent(span: Span | undefined, name: string, attributes: Attributes): void {
    if (span !== undefined) this.guard("add a span event", () => span.addEvent(name, attributes));
  }

  private guard(what: string, call: () => unknown): void {
    try {
      call();
    } catch (err) {
      this.logger.warn(`telemetry: could not ${what}`, { error: err });
    }
  }

  /** The newest audit anchor per agent, from sinks whose `emit` resolves with one. */
  private readonly anchors = new Map<string, AuditAnchor>();

  /** The newest anchor the sink reported for `agent`'s events, if its sink reports them. */
  anchorFor(agent: string): AuditAnchor | undefined {
    // Only a receipt recorded by the sink leaves an anchor: without one there is no lookup to make.
    return this.auditSink === undefined ? undefined : this.anchors.get(agent);
  }

  /** Whether audit events go anywhere. */
  get auditing(): boolean {
    return this.auditSink !== undefined;
  }

  /**
   * Keeps `waiting` (a bounded wait for a receipt, which never rejects) until
   * it settles, for {@link Telemetry.flush}.
   */
  track(waiting: Promise<void>): void {
    this.tracked.add(waiting);
    void waiting.then(() => this.tracked.delete(waiting));
  }

  /** Resolves once every wait handed to {@link Telemetry.track} so far has settled. */
  async flush(): Promise<void> {
    if (this.tracked.size > 0) await Promise.all(this.tracked);
  }

  /**
   * The decision the sink holds on record for the pause `suspensionId` of
   * `agent`: the event, `undefined` when there is none (or the sink cannot
   * read back, or there is no sink), `null` when the sink could not be read
   * (logged). Never rejects.
   */
  async recordedSettlement(agent: string, suspensionId: string): Promise<AuditEvent | undefined | null> {
    const sink = this.auditSink;
    if (sink?.recordedSettlement === undefined) return undefined;
    try {
      return await sink.recordedSettlement(agent, suspensionId);
    } catch (err) {
      this.logger.error("audit: the sink could not be read for the decision on record of a restored pause", { agent, suspensionId, error: err });
      return null;
    }
  }

  /** Emits an audit event; resolves when the sink accepted it. Never rejects: failures are logged and reported as `false`. */
  audit(event: string, agent: string, details: JsonObject): Promise<boolean> {
    // Without a sink every agent's start and stop would make a promise for nothing: they share one.
    return this.auditSink === undefined ? NOTHING_TO_RECORD : this.record(this.auditSink, event, agent, details);
  }

  /**
   * A decision's receipt ({@link Telemetry.audit}), except that a sink that
   * refused it because the agent's owner of record is another process
   * (`STATE_FENCED`, see `PostgresAuditSink`'s `stateTable`) rejects with that error.
   */
  auditDecision(event: string, agent: string, details: JsonObject): Promise<boolean> {
    return this.auditSink === undefined ? NOTHING_TO_RECORD : this.record(this.auditSink, event, agent, details, true);
  }

  private async record(sink: AuditSink, event: string, agent: string, details: JsonObject, fencedRejects = false): Promise<boolean> {
    const stamped = this.ownerFence === undefined || "fence" in details ? details : { ...details, fence: this.ownerFence };
    try {
      const anchor = anchorOf(await sink.emit({ event, ts: isoTime(this.clock.now()), agent, signerId: this.signerId, details: stamped }));
      if (anchor !== undefined && (this.anchors.get(agent)?.seq ?? -1) < anchor.seq) this.anchors.set(agent, anchor);
      return true;
    } catch (err) {
      if (fencedRejects && err instanceof StateFencedError) throw err;
      this.logger.error("audit: the sink failed to record an event", { event, agent, error: err });
      return false;
    }
  }
}

/** What {@link Telemetry.audit} returns when there is no sink. */
const NOTHING_TO_RECORD: Promise<boolean> = Promise.resolve(true);

/** The globally registered provider, or `undefined` when only the no-op one is there. */
function globalProvider(): TracerProvider | undefined {
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  const delegate = provider.getDelegate?.() ?? provider;
  return delegate.constructor.name === "NoopTracerProvider" ? undefined : provider;
}
