import type { ProcessStatus } from "../contracts/process-status.js";

/**
 * How far an `elapse` command moves the clock, and how long a `suspend` with
 * `deadline` may last: short enough that a scenario's asks (30 s timeout)
 * do not time out unless it holds more than 59 `elapse` commands.
 */
export const LIFECYCLE_DEADLINE_MS = 500;

/**
 * How a `resume` (or `deny`) command names its approver (decider):
 * - `"valid"`: a non-empty approver (`"approver-3"`), accepted;
 * - `"empty"`: `""`, refused with `INVALID_APPROVER`;
 * - `"whitespace"`: `" \t"`, refused with `INVALID_APPROVER`;
 * - `"stale"`: a valid approver with the `suspensionId` of an earlier
 *   suspension (or of one that never existed), refused with `STALE_APPROVAL`.
 */
export type ApproverKind = "valid" | "empty" | "whitespace" | "stale";

/** Every {@link ApproverKind}. */
export const APPROVER_KINDS: readonly ApproverKind[] = Object.freeze(["valid", "empty", "whitespace", "stale"]);

/**
 * One step of a lifecycle scenario for one agent (the *subject*), which runs
 * under a ONE_FOR_ALL supervisor next to one *sibling*.
 *
 * `id` is the business sequence number of the message a command sends (not
 * a `Message.id`): unique within a scenario and increasing.
 *
 * - `send` / `ask`: a business message to the subject (`runtime.send` / `runtime.ask`);
 * - `selfSuspend`: a business message whose handler calls `this.suspend(reason)`;
 * - `crash`: a business message whose handler throws, and `onError` escalates:
 *   the subject crashes and the supervisor restarts both children. A SUSPENDED
 *   subject handles no business message, so the crash waits in the mailbox
 *   until a resume lets the subject reach it;
 * - `suspend`: `runtime.suspend(subject, reason)` (external);
 *   With `deadline`, the pause may last {@link LIFECYCLE_DEADLINE_MS}
 *   (`expiresInMs`); on a suspended subject that replaces its deadline;
 * - `resume`: `runtime.resume(subject, approver)`; with `bySuspensionId` a
 *   valid resume also names the current suspension (`{ suspensionId }`);
 * - `deny`: `runtime.deny(subject, approver)`, with the same approver kinds
 *   and `bySuspensionId` as `resume`;
 * - `elapse`: the clock moves {@link LIFECYCLE_DEADLINE_MS} on (it must be a
 *   `TestClock`): every deadline set so far passes, and a pause holding one
 *   is denied by `"expiry"`;
 * - `siblingCrash`: the sibling crashes, so ONE_FOR_ALL stops and restarts the subject;
 * - `restart`: a process restart: the runtime is stopped and a new one, with
 *   new agent instances, is started on the same store; messages the subject
 *   had not taken are sent again, in order (as a durable transport would keep them);
 * - `shutdown`: `runtime.stop()`; the scenario ends, later commands are ignored.
 */
export type LifecycleCommand =
  | { readonly kind: "send"; readonly id: number }
  | { readonly kind: "ask"; readonly id: number }
  | { readonly kind: "selfSuspend"; readonly id: number; readonly reason: string }
  | { readonly kind: "crash"; readonly id: number }
  | { readonly kind: "suspend"; readonly reason: string; readonly deadline?: boolean }
  | { readonly kind: "resume"; readonly approver: ApproverKind; readonly bySuspensionId?: boolean }
  | { readonly kind: "deny"; readonly approver: ApproverKind; readonly bySuspensionId?: boolean }
  | { readonly kind: "elapse" }
  | { readonly kind: "siblingCrash" }
  | { readonly kind: "restart" }
  | { readonly kind: "shutdown" };

/** The `kind` of a {@link LifecycleCommand}. */
export type LifecycleCommandKind = LifecycleCommand["kind"];

/** Every {@link LifecycleCommandKind}. */
export const LIFECYCLE_COMMAND_KINDS: readonly LifecycleCommandKind[] = Object.freeze([
  "send",
  "ask",
  "selfSuspend",
  "crash",
  "suspend",
  "resume",
  "deny",
  "elapse",
  "siblingCrash",
  "restart",
  "shutdown",
]);

/** A command that sends a business message (it carries an `id`). */
export type MessageCommand = Extract<LifecycleCommand, { readonly id: number }>;

/** Whether `command` sends a business message to the subject. */
export function isMessageCommand(command: LifecycleCommand): command is MessageCommand {
  return command.kind === "send" || command.kind === "ask" || command.kind === "selfSuspend" || command.kind === "crash";
}

/**
 * What one command led to:
 * - `"handled"`: its message was taken by the subject within the step;
 * - `"queued"`: its message waits in the mailbox (the subject is SUSPENDED);
 * - `"suspended"`: a new suspension began; `"updated"`: the subject was already
 *   suspended, only the reason changed (same suspension);
 * - `"resumed"`: SUSPENDED → RUNNING; `"noop"`: a valid resume (or deny) of a
 *   running subject, or an `elapse` that expired no pause;
 * - `"denied"`: SUSPENDED → RUNNING by a deny; `"expired"`: by an `elapse` (decider `"expiry"`);
 * - `"INVALID_APPROVER"` / `"STALE_APPROVAL"`: the resume or deny was refused with that code;
 * - `"restarted"`: the subject was stopped and started again (sibling crash, process restart);
 * - `"stopped"`: the runtime was shut down; `"ignored"`: a command after the shutdown;
 * - `` `error:${code}` ``: the runtime rejected the command with an unexpected error (never predicted).
 */
export type StepResult =
  | "handled"
  | "queued"
  | "suspended"
  | "updated"
  | "resumed"
  | "denied"
  | "expired"
  | "noop"
  | "INVALID_APPROVER"
  | "STALE_APPROVAL"
  | "restarted"
  | "stopped"
  | "ignored"
  | `error:${string}`;

/** A status change of the subject, written `"FROM->TO"` (`"RUNNING->SUSPENDED"`) so diffs read well. */
export type TransitionText = `${ProcessStatus}->${ProcessStatus}`;

/** The state of the subject after one command. */
export interface LifecycleStep {
  /** The command applied. */
  readonly command: LifecycleCommand;
  /** What it led to. */
  readonly result: StepResult;
  /** The subject's status once everything the command set off has settled. */
  readonly status: ProcessStatus;
  /**
   * The suspension the subject holds, numbered 1, 2, … in the order
   * suspensions began (a new number means a new `suspensionId`), or `null`.
   * A subject shut down while SUSPENDED still holds it (it is durable).
   */
  readonly suspension: number | null;
  /** The current suspension's reason, or `null`. */
  readonly reason: string | null;
  /** The subject's status changes during the step, in order. */
  readonly transitions: readonly TransitionText[];
}

/** How an `ask` ended: `"replied"`, `"pending"` (unanswered when the scenario ended) or the error code it was rejected with. */
export type AskOutcome = "replied" | "pending" | (string & {});

/**
 * Everything a scenario led to, in a form where the reference model's
 * prediction ({@link SuspensionModel}) and the real runtime's observation
 * ({@link LifecycleDriver}) can be compared with one `toEqual`.
 */
export interface LifecycleOutcome {
  /** One entry per command, in order. */
  readonly steps: readonly LifecycleStep[];
  /** Ids of the `send`, `ask` and `selfSuspend` messages the subject handled to the end, in the order it handled them. */
  readonly handled: readonly number[];
  /** Ids of the `crash` messages the subject took (each one crashed it), in order. */
  readonly crashed: readonly number[];
  /** Ids of the messages still waiting for the subject when the scenario ended, in order. */
  readonly unhandled: readonly number[];
  /** How each `ask` ended, by id. */
  readonly asks: Readonly<Record<number, AskOutcome>>;
  /**
   * The suspension whose marker is in the store once the runtime has stopped
   * (after a `shutdown`, or the clean-up at the end), or `null`: a restart
   * of the process would come back in it.
   */
  readonly stored: number | null;
}

/** `"FROM->TO"` for a status change. */
export function transitionText(from: ProcessStatus, to: ProcessStatus): TransitionText {
  return `${from}->${to}`;
}

/** A one-line description of a command, for logs and failure messages: `send#3`, `resume(stale)`. */
export function formatCommand(command: LifecycleCommand): string {
  switch (command.kind) {
    case "send":
    case "ask":
    case "crash":
      return `${command.kind}#${command.id}`;
    case "selfSuspend":
      return `selfSuspend#${command.id}(${JSON.stringify(command.reason)})`;
    case "suspend":
      return `suspend(${JSON.stringify(command.reason)}${command.deadline === true ? ", deadline" : ""})`;
    case "resume":
    case "deny":
      return `${command.kind}(${command.approver}${command.bySuspensionId === true ? ", bySuspensionId" : ""})`;
    default:
      return command.kind;
  }
}
