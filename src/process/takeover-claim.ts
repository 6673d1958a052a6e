import { CivitasError } from "../errors/civitas-error.js";
import { StateFencedError } from "../errors/errors.js";
import { afterFailedPersist } from "./fencing.js";
import type { ProcessRunner } from "./process-runner.js";

// A takeover on a fenced store, in the order that keeps a former owner's late receipts out of every
// decision: first the `agent.claimed` receipt stamped with this runtime's fence, then the store's
// claim. A receipt the former owner appends after the claim (its marker write is refused from then
// on) comes after `agent.claimed` in the log, so readers see it as written by a fenced-out owner
// (audit/owner-fence.ts); one appended before came before the takeover and is the pause's decision.

/**
 * Claims the agent's record for this runtime's fence, once per runtime,
 * before its first restore; nothing for a store that does not fence its
 * writers. A sink that cannot record the claim fails the start (a claim
 * without its receipt would let a former owner's late receipt count);
 * a newer owner fails it with `STATE_FENCED` and fences this instance out
 * (fencing.ts).
 * @internal
 */
export function claimOnFirstStart(runner: ProcessRunner): Promise<void> | undefined {
  const store = runner.requireServices().store;
  const fence = store.fence ?? 0;
  // Nothing to claim (the usual case): no promise, so a start need not wait a turn for nothing.
  if (runner.claimed || fence === 0 || store.claim === undefined) return undefined;
  return claim(runner, fence);
}

async function claim(runner: ProcessRunner, fence: number): Promise<void> {
  const services = runner.requireServices();
  const store = services.store;
  const name = runner.agent.name;
  if (services.telemetry.auditing && !(await services.telemetry.audit("agent.claimed", name, { fence }))) {
    throw new CivitasError(
      "AUDIT_UNAVAILABLE",
      `the audit sink could not record that this runtime (fence ${fence}) takes '${name}' over, so '${name}' was not claimed and its start fails; fix the sink (its supervisor restarts it)`,
    );
  }
  try {
    await store.claim?.([name]);
  } catch (error) {
    // Owned by a newer fence already: lost ownership, as a refused write is (recorded, never started again here).
    if (error instanceof StateFencedError) afterFailedPersist(runner, error);
    throw error;
  }
  runner.claimed = true;
}
