/**
 * Helpers shared by the adversarial review tests (test/review): runtimes on
 * real timers that are stopped after each test, bounded waits for a promise
 * or a condition, and an in-memory store to wrap.
 *
 * `gate` is the one of `./agents.ts` (re-exported here); for what a call
 * threw or a promise rejected with, see `caught` / `rejected` in `./outcome.ts`.
 */
import { afterEach } from "vitest";
import {
  CivitasError,
  InMemoryStateStore,
  Runtime,
  silentLogger,
  Supervisor,
  SUSPENSION_KEY,
  type JsonObject,
  type RuntimeOptions,
  type StateStore,
  type SupervisorOptions,
} from "../../src/index.js";

import type { Gate } from "./agents.js";

export { gate, type Gate } from "./agents.js";

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

/** How a promise settled within a time limit: see {@link outcome}. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown } | "pending";

/** Settles to `{ ok: true, value }` or `{ ok: false, error }` within `ms`, or to `"pending"`. */
export async function outcome<T>(promise: Promise<T>, ms: number): Promise<Outcome<T>> {
  return Promise.race([
    promise.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
    new Promise<"pending">((resolve) => setTimeout(() => resolve("pending"), ms)),
  ]);
}

/** How a promise settles within `ms`: the `code` of its error (else the error as a string), `"resolved"`, or `"pending"`. */
export async function settlement(promise: Promise<unknown>, ms: number): Promise<string> {
  return Promise.race([
    promise.then(
      () => "resolved",
      (error: unknown) => String((error as { code?: unknown }).code ?? error),
    ),
    sleep(ms).then(() => "pending"),
  ]);
}

/** The code of a {@link CivitasError}, or `"not a CivitasError: …"` for anything else. */
export function codeOf(error: unknown): string {
  return error instanceof CivitasError ? error.code : `not a CivitasError: ${String(error)}`;
}

// ---- state ------------------------------------------------------------------

/**
 * A {@link StateStore} that hands every call to `inner`, an
 * {@link InMemoryStateStore} (where a test can also read or seed the data
 * directly): a test store extends it and overrides the calls it changes.
 */
export class WrappedStore implements StateStore {
  readonly durable: boolean = false;
  readonly inner = new InMemoryStateStore();
  get(name: string): Promise<JsonObject | undefined> {
    return this.inner.get(name);
  }
  set(name: string, state: JsonObject): Promise<void> {
    return this.inner.set(name, state);
  }
  delete(name: string): Promise<void> {
    return this.inner.delete(name);
  }
  list(): Promise<string[]> {
    return this.inner.list();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** An {@link InMemoryStateStore} whose next `get` of `holdNext.name` waits for `holdNext.gate` (once). */
export class GatedStore extends InMemoryStateStore {
  holdNext: { name: string; gate: Gate } | undefined;
  override async get(name: string): Promise<JsonObject | undefined> {
    const hold = this.holdNext;
    if (hold !== undefined && hold.name === name) {
      this.holdNext = undefined;
      await hold.gate.promise;
    }
    return super.get(name);
  }
}

/**
 * A stored record holding a pause that is not yet announced (`announced:
 * false`, as a kill between the marker's write and the one recording its
 * announcement leaves it), with `extra` as the rest of the state.
 */
export function unannouncedRecord(reason: string, extra: JsonObject = {}): JsonObject {
  return {
    ...extra,
    [SUSPENSION_KEY]: { reason, since: new Date().toISOString(), approver: null, suspensionId: "0190f0f0-0000-7000-8000-000000000001", announced: false },
  };
}
