import { AgentProcess } from "../process/agent-process.js";
import type { ProcessStatus } from "../process/process-status.js";
import { CivitasError } from "../errors/civitas-error.js";

/** Options of {@link waitForStatus}. */
export interface WaitForStatusOptions {
  /** Give up after this long (wall time). @defaultValue 5000 */
  timeoutMs?: number;
  /** Aborts the wait. */
  signal?: AbortSignal;
}

/** `waitForStatus` gave up: the agent did not reach the status in time. */
export class WaitTimeoutError extends CivitasError {
  constructor(message: string) {
    super("WAIT_TIMEOUT", message);
  }
}

/**
 * Resolves once `agent.status` is `status` (checked on every turn of the
 * event loop), or rejects with `WAIT_TIMEOUT` after `timeoutMs`.
 *
 * @example
 * ```ts
 * await waitForStatus(runtime.getAgent("payer")!, ProcessStatus.RUNNING, { timeoutMs: 1000 });
 * ```
 */
export function waitForStatus(agent: AgentProcess, status: ProcessStatus, options: WaitForStatusOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const error = new WaitTimeoutError(`'${agent instanceof AgentProcess ? agent.name : String(agent)}' did not reach ${status} within ${timeoutMs} ms`);
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (options.signal?.aborted) return reject(options.signal.reason as Error);
      if (agent.status === status) return resolve();
      if (Date.now() >= deadline) return reject(new WaitTimeoutError(`${error.message} (it is ${agent.status})`));
      setTimeout(check, 1);
    };
    check();
  });
}
