import { StateFencedError } from "../errors/errors.js";
import type { ProcessRunner } from "./process-runner.js";
import { beginSelfStop } from "./stop-sequence.js";

/**
 * What a persist's failure means for the agent: `STATE_FENCED` is lost
 * ownership (another process took the agent over with a newer fence), so the
 * agent stops at once — its status becomes STOPPING before anything else
 * runs, no further message is taken, `onStop` runs, every later write of this
 * instance is refused with the same error without reaching the store, an
 * `agent.fenced` audit event is recorded, and it is never started (shown
 * RUNNING) again in this process. Any other failure (`STORE_UNAVAILABLE` …)
 * is left to the caller, as a failed persist always was.
 *
 * Called from the runner's `persist`, the one path every write of the
 * agent's state takes, and for a decision's receipt that the audit sink
 * refused as fenced out (pause-settlement.ts); rethrows `error` so the caller sees it.
 * @internal
 */
export function afterFailedPersist(runner: ProcessRunner, error: unknown): never {
  if (error instanceof StateFencedError && runner.fencedOut === undefined) {
    runner.fencedOut = error;
    const services = runner.requireServices();
    const name = runner.agent.name;
    services.logger.error(`'${name}' lost ownership: ${error.message}; stopping it at once`, { error });
    void services.telemetry.audit("agent.fenced", name, {
      fence: error.fence,
      currentFence: error.currentFence ?? null,
      status: runner.currentStatus,
    });
    // Parked (a write from outside a handler, such as a timer's checkpoint), the stop ends without its loop.
    beginSelfStop(runner, "fenced");
  }
  throw error;
}
