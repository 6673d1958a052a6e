import { CivitasError } from "./civitas-error.js";

/**
 * An `ask` whose handler failed for good: `handle()` threw and the agent's
 * `onError` answered an action that ends the message (`SKIP`, `STOP`,
 * `ESCALATE`, or `RETRY` past `maxRetries`), so no reply will ever come. The
 * ask rejects with it at once instead of waiting out its `timeoutMs`. The
 * error `handle()` threw is the `cause`, with its own stack.
 *
 * @example
 * ```ts
 * try { await runtime.ask("payer", { amount: 10 }); }
 * catch (err) {
 *   if (err instanceof HandlerFailedError) console.error(`payer failed (${err.action}):`, err.cause);
 * }
 * ```
 */
export class HandlerFailedError extends CivitasError {
  /** The agent whose handler failed. */
  readonly agent: string;
  /** The id of the request message it failed. */
  readonly messageId: string;
  /** What `onError` answered (`SKIP`, `STOP`, `ESCALATE` or `RETRY`), as it answered it; `REFUSED` for a request another runtime refused without running its handler. */
  readonly action: string;
  /** The 0-based attempt that failed last (`maxRetries` when retries ran out). */
  readonly attempt: number;

  /** `message` replaces the default text (a request refused in another runtime for another reason than its handler). */
  constructor(agent: string, messageId: string, action: string, attempt: number, error: unknown, message?: string) {
    const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const retries = attempt > 0 ? ` after ${attempt} ${attempt === 1 ? "retry" : "retries"}` : "";
    super(
      "HANDLER_FAILED",
      message ?? `'${agent}' failed the request ${messageId}${retries} and onError answered ${action}, so no reply will come (${what}); the error is this error's cause — fix the handler, or have onError return RETRY to try again`,
      { cause: error },
    );
    this.agent = agent;
    this.messageId = messageId;
    this.action = action;
    this.attempt = attempt;
  }
}
