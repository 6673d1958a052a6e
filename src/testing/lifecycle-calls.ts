import { CivitasError } from "../errors/civitas-error.js";
import { uuidv7 } from "../message/ids.js";
import type { Clock } from "../time/clock.js";
import type { LifecycleCommand, StepResult } from "./lifecycle-command.js";

/** Who a `resume` or `deny` command names as approver (decider), and the suspension it names, if any. */
interface Approval {
  readonly approver: string;
  readonly suspensionId: string | undefined;
}

/**
 * The approver (a deny's decider) and suspension id the driver passes for
 * `command` at step `step`: a fresh approver per step, so a receipt naming
 * it tells which step lifted a pause. `suspended` is the subject's
 * suspension when the command was issued; a `"stale"` approval names the
 * latest other one of `seen`, or a new id (from `clock`) when there is none.
 * @internal
 */
export function approvalOf(command: Extract<LifecycleCommand, { kind: "resume" | "deny" }>, step: number, suspended: string | undefined, seen: readonly string[], clock: Clock): Approval {
  const approver = command.approver === "empty" ? "" : command.approver === "whitespace" ? " \t" : `approver-${step}`;
  let suspensionId: string | undefined;
  if (command.approver === "stale") suspensionId = [...seen].reverse().find((id) => id !== suspended) ?? uuidv7(clock.now());
  else if (command.approver === "valid" && command.bySuspensionId === true) suspensionId = suspended;
  return { approver, suspensionId };
}

/**
 * The code a rejected call is recorded under: a `CivitasError`'s `code`, else the error's name.
 * @internal
 */
export function codeOf(error: unknown): string {
  if (error instanceof CivitasError) return error.code;
  return error instanceof Error ? error.name : String(error);
}

/**
 * The result of a command whose call rejected with `error`: the expected refusals by their code, anything else as `error:CODE`.
 * @internal
 */
export function resultOf(error: unknown): StepResult {
  const code = codeOf(error);
  return code === "INVALID_APPROVER" || code === "STALE_APPROVAL" ? code : `error:${code}`;
}
