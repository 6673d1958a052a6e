import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type Sampler,
} from "@opentelemetry/sdk-trace-base";

/** An in-memory tracer provider for tests: every ended span lands in `exporter`. */
export interface TestTracing {
  readonly provider: BasicTracerProvider;
  readonly exporter: InMemorySpanExporter;
  /** Every finished span so far. */
  spans(): ReadableSpan[];
  /** Finished spans with this name. */
  named(name: string): ReadableSpan[];
  /** Shuts the provider down. */
  close(): Promise<void>;
}

/**
 * Builds a `BasicTracerProvider` (sdk-trace-base 2.x) exporting through a
 * `SimpleSpanProcessor` to memory (sampled spans only), with the SDK's
 * default sampler (`ParentBased(AlwaysOn)`) unless one is given.
 */
export function testTracing(sampler?: Sampler): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)], ...(sampler === undefined ? {} : { sampler }) });
  return {
    provider,
    exporter,
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
    close: () => provider.shutdown(),
  };
}

/** The parent span id of `span` (sdk-trace-base 2.x keeps it in `parentSpanContext`). */
export function parentSpanId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
