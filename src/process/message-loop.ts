import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import { HandlerFailedError } from "../errors/handler-failed-error.js";
import { nextAttempt, type Message } from "../message/message.js";
import { isReservedType, priorityOf } from "../message/system-types.js";
import { forceMessage, requeueMessage } from "../mailbox/mailbox-internals.js";
import { type ChildTerminationReason } from "./dynamic-host.js";
import { composeReply } from "./envelope.js";
import { ErrorAction } from "./error-action.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { cancelOnHalt } from "./pause-settlement.js";
import { resumeFrom } from "./resume.js";
import { isMintedControl } from "./control-authority.js";
import type { ProcessRunner } from "./process-runner.js";
import { crash, beginSelfStop, stopPlanOf } from "./stop-sequence.js";
import { receiptRecorded, runHook } from "./hooks.js";
import { refuse, routeResult, deliverQuietly, reportForgedControl } from "./effects.js";
import { admit, afterHandle } from "./approval-gate.js";
import { approvalControl, APPROVAL_CONTROL } from "./approval-release.js";

/** Awaited once per wake-up: one settled promise, shared. */
const WAKE: Promise<void> = Promise.resolve();

/** What a loop that parked at once leaves behind (see {@link run}): one settled promise, shared. */
const PARKED: Promise<void> = Promise.resolve();

/**
 * Begins the message loop of incarnation `generation`; settles when it
 * parks or the incarnation ends. When its first turn would find nothing to
 * do (the agent RUNNING or SUSPENDED, both lanes empty, no pause to apply,
 * no abandoned handler to wait for), it parks at once, as that turn would:
 * every start wakes the loop, and an idle agent then costs no async frame.
 */
export function run(r: ProcessRunner, generation: number): Promise<void> {
  const status = r.currentStatus;
  const box = r.box;
  if (
    (status === ProcessStatus.RUNNING || status === ProcessStatus.SUSPENDED) &&
    box !== undefined &&
    box.size === 0 &&
    box.prioritySize === 0 &&
    generation === r.generation &&
    r.abandoned === undefined &&
    r.suspension.request === undefined &&
    r.suspension.deadline?.due !== true
  ) {
    r.driving = false;
    box.park(r, status === ProcessStatus.SUSPENDED);
    return PARKED;
  }
  return loop(r, generation);
}

/**
 * The message loop of incarnation `generation`: dispatches messages until
 * the mailbox is empty — then it parks (the mailbox nudges it when work
 * arrives, so an idle agent holds no pending promise) — or the incarnation
 * ends (the `stopping` phase then goes on without it: stop-sequence.ts).
 * One async frame per wake-up: the untraced dispatch of a business message
 * is inlined here, as it is the runtime's hot path.
 */
async function loop(r: ProcessRunner, generation: number): Promise<void> {
  await WAKE; // a handler never runs inside the call stack of whoever woke the loop
  const abandoned = r.abandoned;
  if (abandoned !== undefined) {
    // Never two handlers at once, even when a stop gave up on one: wait for it (it cannot be killed).
    await abandoned;
    if (r.abandoned === abandoned) r.abandoned = undefined;
  }
  const mailbox = r.mailbox;
  const services = r.requireServices();
  const scheduler = services.scheduler;
  const telemetry = services.telemetry;
  try {
    for (;;) {
      // Only a dispatch counts towards the next yield: finding the mailbox empty (and parking) is not one.
      if (mailbox.size > 0 || mailbox.prioritySize > 0) {
        // After a yield, this dispatch is counted again: agents all woken by the same yield do not dispatch for free.
        for (let pause = scheduler.tick(r); pause !== undefined; pause = scheduler.tick(r)) await pause;
      }
      if (generation !== r.generation) break;
      // The message handled last came from the durable backlog and its handler did not checkpoint: remove it from the store now.
      if (r.backlog?.owed === true) await r.backlog.settle();
      if (r.suspension.request !== undefined || r.suspension.deadline?.due === true) {
        const applying = r.suspension.applySuspendRequest();
        if (applying !== undefined) await applying;
      }
      let message: Message | undefined;
      switch (r.currentStatus) {
        case ProcessStatus.RUNNING:
        case ProcessStatus.SUSPENDED: {
          const priorityOnly = r.currentStatus === ProcessStatus.SUSPENDED; // suspended: control messages only
          message = priorityOnly ? mailbox.pollPriority() : mailbox.poll();
          if (message === undefined) {
            // The business lane is empty: what the backlog still holds expired in the mailbox. Stored no more (next turn).
            if (!priorityOnly && r.backlog !== undefined && r.backlog.size > 0 && r.backlog.dropGone()) continue;
            r.driving = false;
            mailbox.park(r, priorityOnly);
            return;
          }
          if (priorityOnly && priorityOf(message.type) === 0) {
            // A business type on the priority lane (a hand-built message put into the mailbox) is business:
            // it waits with the rest of the business for the resume.
            services.logger.warn(`'${r.agent.name}' is SUSPENDED: message ${message.id} of type '${message.type}' came on the priority lane and waits with the business messages`);
            if (!mailbox.closed) forceMessage(mailbox, { ...message, priority: 0 });
            continue;
          }
          break;
        }
        case ProcessStatus.STOPPING: {
          // A pause asked for (before or during the drain) makes the rest of the business unapproved work.
          const plan = stopPlanOf(r);
          message =
            plan?.drainAll === true && r.suspension.request === undefined
              ? (mailbox.pollPriority() ?? (mailbox.businessTakenCount < plan.drainEnd ? mailbox.poll() : undefined))
              : undefined;
          break;
        }
        default:
          message = undefined;
      }
      if (message === undefined) {
        r.driving = false;
        break;
      }
      if (message.priority === 0) r.backlog?.took(message);
      const type = message.type;
      if (isReservedType(type) || type === "civitas.eval.halt") {
        const acting = control(r, message, type); // most control messages act at once: no promise to wait for
        if (acting !== undefined) await acting;
        continue;
      }
      const span = telemetry.tracing
        ? telemetry.startMessageSpan(
            "civitas.agent.handle",
            { "civitas.agent.name": r.agent.name, "civitas.message.type": type, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt },
            message,
          )
        : undefined;
      const gate = r.gate;
      if (gate !== undefined && type !== "civitas.eval.correction") {
        // The policy gate: a held or denied message is not handled (approval-gate.ts).
        const admitted = admit(gate, message, span);
        if (admitted !== true && !(await admitted)) {
          if (span !== undefined) telemetry.endSpan(span);
          continue;
        }
      }
      r.current = message;
      r.span = span;
      let result: unknown;
      let failure: { error: unknown } | undefined;
      try {
        result = type === "civitas.eval.correction" ? await r.agent.onCorrection(message) : await r.agent.handle(message);
      } catch (error) {
        failure = { error };
      }
      if (span !== undefined) telemetry.endSpan(span, failure?.error);
      if (generation !== r.generation) {
        // A stop gave up waiting for this handler: whatever it produced is dropped, it can no longer act.
        services.logger.warn(`'${r.agent.name}' finished message ${message.id} after its stop timed out; its result is dropped`, failure);
        break;
      }
      r.current = undefined;
      r.span = undefined;
      if (r.gate !== undefined) {
        const holding = afterHandle(r.gate, message, failure !== undefined, result);
        if (holding !== undefined) {
          await holding;
          continue;
        }
      }
      if (failure !== undefined) await onFailure(r, failure.error, message, span);
      else if (result !== undefined && result !== null) {
        const routing = routeResult(r, result);
        if (routing !== undefined) await routing;
      }
    }
  } catch (error) {
    // Only a bug in the runtime lands here; never leave the agent half-running.
    if (generation === r.generation) {
      r.driving = false;
      if (r.currentStatus === ProcessStatus.RUNNING) void crash(r, error); // its receipt is awaited by the end it begins
      else if (r.currentStatus === ProcessStatus.SUSPENDED) {
        // SUSPENDED cannot crash (it runs no user code that may fail): stop it, keeping its marker.
        services.logger.error(`'${r.agent.name}' hit an internal error while SUSPENDED; stopping it`, { error });
        beginSelfStop(r, "error");
      }
    }
  }
}

/**
 * Acts on a runtime control message (and `civitas.eval.halt`); unknown
 * reserved types are ignored. `type` is the message's type as the loop read
 * it, once. An `_agency.*` message acts only if the runtime minted it
 * (control-authority.ts) for this very agent (a minted message taken out
 * of one mailbox cannot act in another); any other is dropped and
 * reported. The halt is the kill switch, anyone's to send.
 */
export function control(r: ProcessRunner, message: Message, type: string): Promise<void> | undefined {
  if (type !== "civitas.eval.halt" && !(isMintedControl(message) && message.recipient === r.agent.name)) {
    reportForgedControl(r, message, type);
    return undefined;
  }
  switch (type) {
    case "_agency.shutdown":
      beginSelfStop(r, "shutdown");
      return undefined;
    case "civitas.eval.halt": {
      // The kill switch: a paused agent stops too, and its pause is cancelled on the record.
      const paused = r.currentStatus === ProcessStatus.SUSPENDED;
      beginSelfStop(r, "halt");
      return paused ? cancelOnHalt(r.suspension, message.sender) : undefined;
    }
    case "_agency.heartbeat":
      return message.replyTo === undefined ? undefined : deliverQuietly(r, composeReply(r, message, {}, "_agency.heartbeat_ack"), true);
    case "_agency.deregister":
      return notifyChildTerminated(r, message);
    case "_agency.suspend":
      r.suspension.requestSuspend(typeof message.payload.reason === "string" ? message.payload.reason : "", message);
      return undefined;
    case "_agency.resume":
      return resumeFrom(r.suspension, message);
    case APPROVAL_CONTROL:
      return approvalControl(r, message);
    default:
      return undefined;
  }
}

export async function onFailure(r: ProcessRunner, error: unknown, message: Message, handleSpan?: Span): Promise<void> {
  const services = r.requireServices();
  const generation = r.generation;
  // A failure while stopping (in a drain, or in the message a stop came during) still goes through onError.
  if (r.currentStatus !== ProcessStatus.RUNNING && r.currentStatus !== ProcessStatus.STOPPING) {
    services.logger.error(`'${r.agent.name}' failed a message while ${r.currentStatus}`, { error, message: message.id });
    failRequest(r, message, error, "none (onError was not asked)");
    return;
  }
  let action: ErrorAction;
  try {
    action = await r.agent.onError(error, message);
  } catch (hookError) {
    services.logger.error(`'${r.agent.name}'.onError threw; escalating`, { error: hookError });
    action = ErrorAction.ESCALATE;
  }
  if (generation !== r.generation) {
    // A stop gave up on this incarnation while onError ran: its answer must not act on the next one.
    services.logger.warn(`'${r.agent.name}'.onError answered after a stop gave up on it; its answer (${describeValue(action)}) is dropped`, { error });
    failRequest(r, message, error, action);
    return;
  }
  if (r.currentStatus === ProcessStatus.STOPPING) {
    const plan = stopPlanOf(r);
    // On its way out, it cannot crash or stop again. A retry goes back to the mailbox: next in a drain-all,
    // otherwise queued with the rest for the next incarnation (a restart keeps the mailbox).
    if (action === ErrorAction.RETRY && message.attempt < r.options.maxRetries && !r.mailbox.closed) {
      const again = nextAttempt(message);
      if (plan?.drainAll === true) requeueMessage(r.mailbox, again);
      else forceMessage(r.mailbox, again);
      r.backlog?.retried(message, again, plan?.drainAll === true);
    } else {
      failRequest(r, message, error, action);
      if (action === ErrorAction.SKIP) return;
      const drainEnds = plan?.drainAll === true ? "; the drain ends, what is still queued is left unhandled" : "";
      if (plan !== undefined) plan.drainAll = false;
      services.logger.error(
        `'${r.agent.name}' failed a message while STOPPING (${message.id}, onError: ${describeValue(action)}): on its way out it cannot crash or stop again, so the message is dropped${drainEnds}`,
        { error },
      );
    }
    return;
  }
  if (r.currentStatus !== ProcessStatus.RUNNING) {
    failRequest(r, message, error, action);
    return;
  }
  if (action === ErrorAction.RETRY && message.attempt < r.options.maxRetries) {
    // A child of the failed handle span, in the message's own trace: never in whatever context woke the loop.
    const span = services.telemetry.startChildSpan("civitas.agent.retry", { "civitas.agent.name": r.agent.name, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt + 1 }, handleSpan, message);
    const again = nextAttempt(message);
    forceMessage(r.mailbox, again);
    r.backlog?.retried(message, again, false);
    services.telemetry.endSpan(span);
    return;
  }
  // Anything else ends the message: the ask waiting for it learns so now, not at its timeout.
  if (action === ErrorAction.SKIP || action === ErrorAction.STOP) {
    failRequest(r, message, error, action);
    if (action === ErrorAction.STOP) beginSelfStop(r, "stop");
    return;
  }
  if (action === ErrorAction.RETRY) {
    services.logger.error(`'${r.agent.name}' gave up on message ${message.id} after ${r.options.maxRetries} retries`, { error });
  } else if (action !== ErrorAction.ESCALATE) {
    services.logger.error(`'${r.agent.name}'.onError returned ${describeValue(action)}, not an ErrorAction; escalating`);
  }
  const crashRecorded = crash(r, error);
  // The crash is on record before the caller hears of it.
  await receiptRecorded(r, "agent.crash", crashRecorded);
  failRequest(r, message, error, action);
}

/**
 * Rejects the ask waiting for `message`, if it is a request and one still
 * waits, with `HANDLER_FAILED` carrying `error`: its handler failed for
 * good (`action` ended it), so no reply will come.
 */
export function failRequest(r: ProcessRunner, message: Message, error: unknown, action: unknown): void {
  if (message.replyTo === undefined || message.correlationId === undefined) return;
  const answered = typeof action === "string" ? action : describeValue(action);
  refuse(r, message, new HandlerFailedError(r.agent.name, message.id, answered, message.attempt, error));
}

export async function notifyChildTerminated(r: ProcessRunner, message: Message): Promise<void> {
  const { name, reason } = message.payload;
  await runHook(r, "onChildTerminated", () => r.agent.onChildTerminated(name as string, reason as ChildTerminationReason), r.options.shutdownTimeoutMs);
}
