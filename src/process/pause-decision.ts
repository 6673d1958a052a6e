import { IdentityChangedError, ResumeRefusedError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { settlesWithin } from "../time/deadline.js";
import { describeIdentity, frozenIdentity, sameIdentity, type AgentIdentity, type SuspensionMarker } from "../state/suspension-marker.js";
import type { ProcessRunner } from "./process-runner.js";

// What is checked before a pause is decided: the agent's identity against the pause's, and `authorizeResume`.

function noop(): void {}

/** The identity made last, and the frozen capability list it was made from: agents usually share one (most have none). */
let last: { readonly version: string | null; readonly from: readonly string[]; readonly identity: AgentIdentity } | undefined;

/** What this agent is now, frozen: the identity a pause records and a resume compares. */
export function agentIdentity(runner: ProcessRunner): AgentIdentity {
  const declared = (runner.agent.constructor as { version?: unknown }).version;
  const version = typeof declared === "string" ? declared : null;
  const from = runner.agent.capabilities;
  // A frozen list (what AgentOptions makes) cannot have changed since: its identity is the one made from it.
  if (last !== undefined && last.from === from && last.version === version) return last.identity;
  const identity = frozenIdentity({ version, capabilities: [...from].sort() });
  if (Object.isFrozen(from)) last = { version, from, identity };
  return identity;
}

/**
 * Compares the identity the pause recorded with the agent's now. A change
 * refuses the resume (`IDENTITY_CHANGED`) unless the caller accepts it;
 * then it is returned, to be recorded in the resume's receipt.
 */
export function identityChange(runner: ProcessRunner, marker: SuspensionMarker, accept: boolean): JsonObject | undefined {
  const recorded = marker.identity;
  const now = agentIdentity(runner);
  if (recorded === undefined || sameIdentity(recorded, now)) return undefined;
  if (!accept) throw new IdentityChangedError(runner.agent.name, describeIdentity(recorded), describeIdentity(now));
  return {
    from: { version: recorded.version, capabilities: [...recorded.capabilities] },
    to: { version: now.version, capabilities: [...now.capabilities] },
  };
}

/**
 * Asks `authorizeResume`, for at most the agent's `shutdownTimeoutMs`: the
 * agent's control messages (a halt, another suspend) wait while it decides,
 * so a hook that never answers must not hold them forever. No answer in
 * time is a refusal. `decision` tells it whether this is an approval or a denial.
 */
export async function authorize(runner: ProcessRunner, approver: string, marker: SuspensionMarker, decision: "approve" | "deny" = "approve"): Promise<void> {
  const services = runner.requireServices();
  const hook = services.authorizeResume;
  if (hook === undefined) return;
  const limitMs = runner.options.shutdownTimeoutMs;
  let allowed: unknown;
  try {
    const deciding = Promise.resolve(hook(runner.agent.name, approver, { ...marker }, { decision }));
    if (!(await settlesWithin(deciding, services.clock, limitMs))) {
      deciding.catch(noop); // a late rejection is no longer anyone's concern
      throw new Error(`authorizeResume did not answer within ${limitMs} ms (the agent's shutdownTimeoutMs)`);
    }
    allowed = await deciding;
  } catch (cause) {
    throw new ResumeRefusedError(runner.agent.name, approver, { cause }, decision === "deny" ? "deny" : "resume");
  }
  if (allowed !== true) throw new ResumeRefusedError(runner.agent.name, approver, undefined, decision === "deny" ? "deny" : "resume");
}
