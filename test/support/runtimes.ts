/**
 * Runtimes for tests on real timers, stopped after each test
 * ({@link runtimes}, {@link supervisedRuntimes}), and bounded real-time waits
 * ({@link sleep}, {@link until}).
 *
 * For what a call or a promise settled to, see `./outcome.ts`; for test
 * stores, `./stores.ts`; for `gate` and test agents, `./agents.ts`.
 */
import { afterEach } from "vitest";
import { Runtime, silentLogger, Supervisor, type RuntimeOptions, type SupervisorOptions } from "../../src/index.js";

// ---- runtimes -------------------------------------------------------------

/** Builds a runtime for `root` (silent logger, no keep-alive, then `options`), stopped after the test. */
export type RuntimeFactory = (root: RuntimeOptions["root"], options?: Partial<RuntimeOptions>) => Runtime;

/** How the `afterEach` registered by {@link runtimes} stops the runtimes of a test. */
export interface RuntimesOptions {
  /**
   * `"bounded"`: waits at most 1.5 s for each stop and ignores a failed one,
   * so a stop that hangs does not hang the suite. `"full"`: awaits every stop
   * to its end, and a stop that rejects fails the test.
   * @defaultValue "bounded"
   */
  readonly stop?: "bounded" | "full";
}

/** How long a `"bounded"` stop is waited for. */
const STOP_BOUND_MS = 1500;

/**
 * Registers (with vitest's `afterEach`, so call it at the top level of a test
 * file) the stop of every runtime the returned factory builds during a test,
 * and returns that factory: `new Runtime({ root, logger: silentLogger,
 * keepAlive: false, ...options })`.
 */
export function runtimes(options: RuntimesOptions = {}): RuntimeFactory {
  const built: Runtime[] = [];
  afterEach(async () => {
    const stopping = built.splice(0);
    if (options.stop === "full") await Promise.all(stopping.map((rt) => rt.stop()));
    // a stop that hangs must not hang the suite
    else await Promise.all(stopping.map((rt) => Promise.race([rt.stop().catch(() => undefined), sleep(STOP_BOUND_MS)])));
  });
  return (root, runtimeOptions = {}) => {
    const rt = new Runtime({ root, logger: silentLogger, keepAlive: false, ...runtimeOptions });
    built.push(rt);
    return rt;
  };
}

/**
 * As {@link runtimes}, but the factory takes the children of the root: it
 * puts them under `new Supervisor("root", { children, backoffBaseMs: 0 })`
 * (restarts without backoff).
 */
export function supervisedRuntimes(
  options: RuntimesOptions = {},
): (children: SupervisorOptions["children"], options?: Partial<RuntimeOptions>) => Runtime {
  const runtime = runtimes(options);
  return (children, runtimeOptions = {}) => runtime(new Supervisor("root", { children, backoffBaseMs: 0 }), runtimeOptions);
}

/** Starts `runtime` and gives it back, for a set-up in one line: `const rt = await whenStarted(supervised([a, b]))`. */
export async function whenStarted<T extends { start(): Promise<void> }>(runtime: T): Promise<T> {
  await runtime.start();
  return runtime;
}

// ---- waiting ----------------------------------------------------------------

/** Resolves after `ms` milliseconds (a real timer). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `predicate` on real timers (every `pollMs`) until it holds; rejects
 * with "`what` not reached in time" once `timeoutMs` has passed.
 */
export async function until(predicate: () => boolean, what = "condition", timeoutMs = 2000, pollMs = 1): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in time`);
    await sleep(pollMs);
  }
}
