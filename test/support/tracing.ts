import { afterEach } from "vitest";
import { Runtime, silentLogger, type RuntimeOptions } from "../../src/index.js";
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

/** What {@link tracedRuntimes} returns: builders whose products are cleaned up after each test. */
export interface TracedRuntimes {
  /** `new Runtime({ root, logger: silentLogger, keepAlive: false, ...options })`, stopped after the test. */
  readonly runtime: (root: RuntimeOptions["root"], options?: Partial<RuntimeOptions>) => Runtime;
  /** A {@link testTracing}, closed after the test. */
  readonly tracing: (sampler?: Sampler) => TestTracing;
}

/** How long the `afterEach` of {@link tracedRuntimes} waits for each runtime's stop. */
const TRACED_STOP_BOUND_MS = 500;

/**
 * Registers (with vitest's `afterEach`, so call it at the top level of a
 * test file) the clean-up of every runtime and tracing the returned
 * builders make during a test: each runtime's stop is waited for at most
 * 500 ms (a stop that rejects in time fails the test), then every tracing is
 * closed. Pass a tracing's `provider` as the runtime's `tracerProvider`, or
 * wrap it (a hostile tracer).
 */
export function tracedRuntimes(): TracedRuntimes {
  const started: Runtime[] = [];
  const tracings: TestTracing[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((rt) => Promise.race([rt.stop(), new Promise((r) => setTimeout(r, TRACED_STOP_BOUND_MS))])));
    await Promise.all(tracings.splice(0).map((t) => t.close()));
  });
  return {
    runtime: (root, options = {}) => {
      const rt = new Runtime({ root, logger: silentLogger, keepAlive: false, ...options });
      started.push(rt);
      return rt;
    },
    tracing: (sampler) => {
      const t = testTracing(sampler);
      tracings.push(t);
      return t;
    },
  };
}
