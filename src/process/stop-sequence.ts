import { RuntimeStateError } from "../errors/errors.js";
import { type JsonObject } from "../message/json.js";
import type { ChildExit, StopOptions } from "../contracts/child.js";
import { settlesWithin } from "../time/deadline.js";
import { nonNegativeInteger } from "./agent-options.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { ProcessRunner } from "./process-runner.js";
import type { Stopping, StopPlan } from "./lifecycle.js";
import { receiptRecorded, runHook, errorText } from "./hooks.js";

/**
 * A stop asked for from outside (a supervisor's `stopChild`) of an agent
 * started, or past its `onStart`: drains as `options` ask, bounded by their
 * `timeoutMs`, then ends the incarnation. A bad `timeoutMs` rejects before
 * anything changes.
 */
export function requestStop(r: ProcessRunner, options: StopOptions): Promise<void> {
  let plan: StopPlan;
  try {
    const timeoutMs = nonNegativeInteger("timeoutMs", options.timeoutMs ?? r.options.shutdownTimeoutMs);
    plan = {
      timeoutMs,
      // A suspended agent is never drained: its queued business is unapproved work.
      drainAll: options.drain === "all" && r.currentStatus !== ProcessStatus.SUSPENDED,
      // "all" is what is queued now: what arrives during the drain (an agent feeding itself, busy senders) waits, as with "current".
      drainEnd: r.mailbox.businessTakenCount + r.mailbox.size,
    };
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the option check's own error, a CivitasError
    return Promise.reject(error);
  }
  return beginStop(r, { kind: "normal", reason: "stopped" }, plan).done;
}

/** A stop of its own (STOP, halt, shutdown, a lost fence, an internal error while SUSPENDED): it ends once its loop does. */
export function beginSelfStop(r: ProcessRunner, reason: string): void {
  if (r.currentStatus !== ProcessStatus.RUNNING && r.currentStatus !== ProcessStatus.SUSPENDED) return;
  beginStop(r, { kind: "normal", reason }, undefined);
}

/** A crash of a RUNNING agent: logged, its receipt begun at once; it ends once its loop does. */
export function crash(r: ProcessRunner, error: unknown): Promise<boolean> {
  const services = r.requireServices();
  const phase = beginStop(r, { kind: "crash", error }, undefined);
  services.logger.error(`'${r.agent.name}' crashed`, { error });
  phase.crashRecorded = services.telemetry.audit("agent.crash", r.agent.name, { error: errorText(error) });
  return phase.crashRecorded;
}

/** What the stop ending the agent now asked for, if it was asked for from outside. */
export function stopPlanOf(r: ProcessRunner): StopPlan | undefined {
  const phase = r.phase;
  return phase.kind === "stopping" ? phase.plan : undefined;
}

/**
 * Enters the `stopping` phase and begins the end of the incarnation:
 * the one place an end begins, and the one caller of {@link finish}.
 */
function beginStop(r: ProcessRunner, exit: ChildExit, plan: StopPlan | undefined): Stopping {
  const from = r.phase;
  const attempt = from.kind === "starting" && !from.attempt.over ? from.attempt : undefined;
  const phase: Stopping = { kind: "stopping", exit, plan, done: ENTERED, crashRecorded: undefined, unfinished: attempt };
  // Made before the phase is entered, so a stop asked at that very instant (an agent.status listener) joins the whole end.
  phase.done = endIncarnation(r, phase);
  r.enter(phase, exit.kind === "crash" ? ProcessStatus.CRASHED : ProcessStatus.STOPPING);
  if (plan !== undefined) {
    r.mailbox.unpark();
    r.wake();
  }
  return phase;
}

/** Awaited first by {@link endIncarnation}: it goes on once its phase is entered. */
const ENTERED: Promise<void> = Promise.resolve();

/**
 * The end of an incarnation, straight through: the loop's last message (or
 * the drain a stop asked for, bounded), `onStop`, the final status, the
 * receipts, then, for an end of its own or a crash, the parent's notice.
 */
async function endIncarnation(r: ProcessRunner, phase: Stopping): Promise<void> {
  const services = r.requireServices();
  const plan = phase.plan;
  await ENTERED;
  if (r.phase !== phase) return; // the change to it was refused
  if (plan === undefined) {
    // Its own end, decided in its loop (or by a write that lost the fence): the loop, if it runs, ends at its next boundary.
    if (r.driving) await r.loopDone;
    // Stopped on its own (STOP, halt) it takes no more messages: senders get MAILBOX_CLOSED, not silence.
    if (phase.exit.kind === "normal") r.close();
  } else {
    if (!(await settlesWithin(r.loopDone ?? Promise.resolve(), services.clock, plan.timeoutMs))) giveUpOnLoop(r, plan.timeoutMs);
  }
  await finish(r, phase);
  // A crash's receipt is durable before the supervisor restarts the agent.
  if (phase.crashRecorded !== undefined) await receiptRecorded(r, "agent.crash", phase.crashRecorded);
  if (r.phase === phase) r.enter({ kind: "down", exit: phase.exit, unfinished: phase.unfinished }, r.currentStatus);
  if (plan === undefined) r.parent?.childExited(r.agent, phase.exit, r.starts);
}

/** The stop's drain ran past its bound: the incarnation's handler keeps running, but nothing of it can act any more. */
function giveUpOnLoop(r: ProcessRunner, timeoutMs: number): void {
  r.requireServices().logger.warn(
    `'${r.agent.name}' did not finish its message within ${timeoutMs} ms; stopping it anyway (its handle() keeps running, its result will be dropped, and a restarted '${r.agent.name}' handles nothing until it returns)`,
  );
  r.generation++;
  // What the abandoned incarnation is still delivering (a result to a full agent) is dropped, not waited for.
  r.results?.abort(new RuntimeStateError("RUNTIME_STOPPED", `'${r.agent.name}' was stopped before this result of its abandoned handler was delivered; it is dropped`));
  // The abandoned handler is no longer "the message being handled": reply() from onStop (or from it) must not answer it.
  r.current = undefined;
  r.span = undefined;
  r.abandoned = r.loopDone;
  r.loopDone = undefined;
}

/** Ends the incarnation: `onStop`, final status, audit. Runs once per incarnation, from {@link endIncarnation} only. */
async function finish(r: ProcessRunner, phase: Stopping): Promise<void> {
  const services = r.requireServices();
  const span = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": r.agent.name });
  r.suspension.deadline?.cancel(); // a pause kept by the stop is armed again by the next start
  // A pause asked for from handle() that the stop came before is kept, as a restart would keep it.
  await r.suspension.keepAskedPause(() => JSON.parse(r.initialState ?? "{}") as JsonObject);
  await runHook(r, "onStop", () => r.agent.onStop(), phase.plan?.timeoutMs ?? r.options.shutdownTimeoutMs);
  if (r.currentStatus === ProcessStatus.STOPPING) r.transition(ProcessStatus.STOPPED);
  // Stopped for good while the runtime stops: no one will take what is queued, so senders still
  // waiting for room (an agent not stopped yet) get MAILBOX_CLOSED now instead of hanging their own stop.
  if (services.stopping.aborted) r.close();
  const exit = phase.exit;
  services.telemetry.endSpan(span);
  if (exit.kind !== "crash") {
    // The stop (and so runtime.stop()) resolves once its receipt is recorded.
    await receiptRecorded(r, "agent.stop", services.telemetry.audit("agent.stop", r.agent.name, { reason: exit.reason }));
  }
}
