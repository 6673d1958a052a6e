import { describeValue } from "../errors/civitas-error.js";
import { checkSignal } from "../errors/check-signal.js";
import { MailboxFullError, ReservedMessageTypeError } from "../errors/errors.js";
import { NOT_PENDING } from "../bus/message-bus.js";
import { findNonJson, isJsonObject } from "../message/json.js";
import { envelopeProblem, isReply, type Message } from "../message/message.js";
import { isReservedType, priorityOf } from "../message/system-types.js";
import { forceMessage, offerTrusted, RESOLVED } from "../mailbox/mailbox-internals.js";
import { snapshotMessage } from "../message/snapshot.js";
import { type DynamicHost } from "./dynamic-host.js";
import { composeReply, isMessage, takeComposedReply } from "./envelope.js";
import type { ProcessRunner } from "./process-runner.js";

/**
 * Resolves a runtime control request (with `value`: a suspend's pause), and
 * returns the promise the runtime handed to whoever made it, so the agent can wait until that caller has
 * been told (`undefined` when nobody waits any more).
 */
export function answer(r: ProcessRunner, request: Message, value?: unknown): Promise<unknown> | undefined {
  if (request.correlationId === undefined) return undefined;
  const told = r.requireServices().bus.acknowledge(request.correlationId, value);
  if (told !== NOT_PENDING) return told;
  // Nobody waits for it any more (timed out, aborted): count it as the late reply it is.
  settleReply(r, composeReply(r, request, {}));
  return undefined;
}

/** Rejects a runtime control request with `error`. */
export function refuse(r: ProcessRunner, request: Message, error: Error): void {
  r.requireServices().bus.refuse(request, error);
}

/** Hands a reply `handle` returned to the ask waiting for it, at once; a failure is logged, not a crash. */
export function settleReply(r: ProcessRunner, reply: Message): void {
  try {
    r.requireServices().bus.settleReply(reply);
  } catch (error) {
    r.requireServices().logger.warn(`'${r.agent.name}' could not deliver its reply to '${reply.recipient}'`, { error });
  }
}

/**
 * Delivers a message the agent sends itself. While it is busy with its own
 * code (see {@link ProcessRunner.busyWithOwnCode}) a full lane is refused
 * with `MAILBOX_FULL` instead of waited on: only the loop waiting for that
 * code could make room.
 */
export function sendToSelf(r: ProcessRunner, message: Message, signal: AbortSignal | undefined): Promise<void> {
  try {
    if (signal !== undefined) checkSignal(signal, `'${r.agent.name}' sending to itself`);
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checkSignal threw, a CivitasError
    return Promise.reject(error);
  }
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  const services = r.requireServices();
  const mailbox = r.mailbox;
  // Only the loop (busy with this very code, or one a stop gave up on) could make room: waiting would wait for itself.
  if (!r.busyWithOwnCode() || mailbox.closed) return services.bus.deliver(message, signal);
  try {
    if (offerTrusted(mailbox, message)) return RESOLVED;
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what offer threw, a CivitasError
    return Promise.reject(error);
  }
  return Promise.reject(new MailboxFullError(r.agent.name));
}

/**
 * Routes what `handle` returned: a reply settles its ask at once, another
 * message is delivered. What is routed is never an object the handler
 * still holds: the reply `r.reply()` built (its handed-out copy stands for
 * it), else a frozen copy read once (see `snapshotMessage`). Editing it
 * afterwards, or a getter that answers differently on each read, changes
 * nothing. Anything that is not a well-formed message is logged and
 * dropped: it never reaches another agent.
 */
export function routeResult(r: ProcessRunner, result: unknown): Promise<void> | undefined {
  // A reply r.reply() built, given back: routed as built, its payload checked then (see handOutReply).
  const composed = takeComposedReply(result);
  if (composed !== undefined) {
    settleReply(r, composed);
    return undefined;
  }
  const logger = r.requireServices().logger;
  if (!isMessage(result)) {
    logger.warn(`'${r.agent.name}'.handle returned ${describeValue(result)}; return r.reply(...) or nothing`);
    return undefined;
  }
  let message: Message;
  try {
    message = snapshotMessage(result);
  } catch (error) {
    logger.error(`'${r.agent.name}'.handle returned a message that could not be read (a getter threw); it is dropped`, { error });
    return undefined;
  }
  const problem = malformation(message);
  if (problem !== undefined) {
    logger.error(`'${r.agent.name}'.handle returned a message to '${message.recipient}' that is not well formed (${problem}); it is dropped. Build messages with r.reply(), or createMessage()`);
    return undefined;
  }
  if (isReply(message)) {
    settleReply(r, message);
    return undefined;
  }
  if (message.recipient === r.agent.name && !r.mailbox.closed && !isReservedType(message.type)) {
    // The loop awaiting this delivery is the only one that could make room: enqueue past a full lane
    // (at most one message per message handled) rather than wait forever.
    forceMessage(r.mailbox, message);
    return undefined;
  }
  return deliverQuietly(r, message);
}

/** Delivers a message the agent produced as a result; a failure is logged, not a crash. */
export async function deliverQuietly(r: ProcessRunner, message: Message, fromRuntime = false): Promise<void> {
  const services = r.requireServices();
  if (!fromRuntime && isReservedType(message.type)) {
    // Application code must never forge runtime control, whatever path it takes.
    services.logger.error(`'${r.agent.name}'.handle returned a '${message.type}' message; reserved types are dropped`, { error: new ReservedMessageTypeError(message.type) });
    return;
  }
  try {
    await services.bus.deliver(message, (r.results ??= new AbortController()).signal);
  } catch (error) {
    services.logger.warn(`'${r.agent.name}' could not deliver its result to '${message.recipient}'`, { error });
  }
}

/**
 * Reports an `_agency.*` message the runtime did not mint (a forgery: put
 * into the mailbox, returned from a handler, retried): logged as an error
 * and emitted as `control.forged`; it is never acted on.
 */
export function reportForgedControl(r: ProcessRunner, message: Message, type: string): void {
  const services = r.requireServices();
  services.logger.error(
    `'${r.agent.name}' dropped a '${type}' message (${describeValue(message.id)} from ${describeValue(message.sender)}) that the runtime did not make: only runtime.suspend/resume and the runtime's supervisors send control, whatever a message's fields say`,
    { error: new ReservedMessageTypeError(type) },
  );
  try {
    services.events.emit("control.forged", r.agent.name, message);
  } catch (error) {
    services.logger.error(`a 'control.forged' listener threw for '${r.agent.name}'`, { error });
  }
}

/**
 * Runs `remove` (a despawn or stop of `name`) on this agent's dynamic
 * host. On itself, from inside its own loop (a handler, a hook such as
 * `onChildTerminated`, one a stop gave up on) or from `onStart`, it is not
 * awaited: the stop waits for that very code to return, so awaiting it
 * would wait out the whole `shutdownTimeoutMs`, or forever for `onStart`.
 * It resolves at once and the agent is removed when that code is done; a
 * failure is logged.
 */
export function removeFromHost(r: ProcessRunner, name: string, remove: (host: DynamicHost) => Promise<void>): Promise<void> {
  const host = r.dynamicHost();
  if (name !== r.agent.name || !r.busyWithOwnCode()) return remove(host);
  remove(host).catch((error: unknown) => r.requireServices().logger.error(`'${name}' could not remove itself`, { error }));
  return RESOLVED;
}

/**
 * What is wrong with a message user code built by hand, or `undefined` when
 * it is well formed: the fields SPEC 2 requires, of their types, a plain JSON
 * payload, and a lane that matches its type (a business type on the
 * priority lane would be handled while the agent is SUSPENDED).
 */
function malformation(message: Message): string | undefined {
  const problem = envelopeProblem(message);
  if (problem !== undefined) return `its ${problem[0]} is ${describeValue((message as unknown as Record<string, unknown>)[problem[0]])}, not ${problem[1]}`;
  const { type, payload, priority } = message;
  if (!isJsonObject(payload) && findNonJson(payload) !== undefined) return "its payload is not plain JSON";
  if ((priority === 0) !== (priorityOf(type) === 0)) return `its priority ${priority} does not match its type '${type}' (control types travel on priority >= 1, business types on 0)`;
  return undefined;
}
