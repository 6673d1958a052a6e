import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { ProcessStatus } from "../contracts/process-status.js";

/** Anything with a name and a lifecycle status: an `AgentProcess`, a `Supervisor`. */
export interface StatusSource {
  readonly name: string;
  readonly status: ProcessStatus;
}

/** Options of {@link waitForStatus}. */
export interface WaitForStatusOptions {
  /** Give up after this long (wall time, not a test clock's). @defaultValue 5000 */
  timeoutMs?: number;
  /** Aborts the wait: it rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** A test helper gave up waiting: the agent did not reach the expected state in time. */
export class WaitTimeoutError extends CivitasError {
  /** The agent waited on. */
  readonly agent: string;
  /** How long it waited. */
  readonly timeoutMs: number;
  /** The agent's status when the wait gave up (set then). */
  lastStatus: ProcessStatus | undefined;

  constructor(agent: string, timeoutMs: number, message: string) {
    super("WAIT_TIMEOUT", message);
    this.agent = agent;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Resolves with the status once `target.status` is `status` (or one of
 * `status`, when given a list), checking on every turn of the event loop;
 * rejects with `WAIT_TIMEOUT` ({@link WaitTimeoutError}, its stack pointing
 * at the caller) after `timeoutMs` of wall time, or with `signal.reason`
 * when aborted. It polls, so it also sees a status that only lasts a moment
 * only if it lasts across a turn of the event loop; to see every change,
 * use {@link recordTransitions}.
 *
 * @throws (rejects) {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a negative or non-finite `timeoutMs`
 * @example
 * ```ts
 * await runtime.send("payer", { pay: 10 }); // its handler calls this.suspend("review")
 * await waitForStatus(runtime.getAgent("payer")!, ProcessStatus.SUSPENDED, { timeoutMs: 1000 });
 * ```
 */
export function waitForStatus(target: StatusSource, status: ProcessStatus | readonly ProcessStatus[], options: WaitForStatusOptions = {}): Promise<ProcessStatus> {
  const wanted: readonly ProcessStatus[] = typeof status === "string" ? [status] : status;
  const timeoutMs = options.timeoutMs ?? 5000;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
    return Promise.reject(new InvalidArgumentError("timeoutMs", `waitForStatus: timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`));
  }
  const name = typeof target?.name === "string" ? target.name : describeValue(target);
  // Created here, before any timer, so its stack points at the caller.
  const timeout = new WaitTimeoutError(name, timeoutMs, `'${name}' did not reach ${wanted.join(" or ")} within ${timeoutMs} ms`);
  const signal = options.signal;
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  const deadline = Date.now() + timeoutMs;
  return new Promise<ProcessStatus>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = (): void => {
      finish();
      reject(signal?.reason as Error);
    };
    const check = (): void => {
      timer = undefined;
      const current = target.status;
      if (wanted.includes(current)) {
        finish();
        resolve(current);
      } else if (Date.now() >= deadline) {
        finish();
        timeout.lastStatus = current;
        timeout.message += ` (it is ${current})`;
        reject(timeout);
      } else {
        timer = setTimeout(check, 1);
      }
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    check();
  });
}
