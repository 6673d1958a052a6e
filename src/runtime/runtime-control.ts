import { notFound } from "../bus/message-bus.js";
import type { Registry } from "../bus/registry.js";
import { describeValue } from "../errors/civitas-error.js";
import { AgentUnreachableError, InvalidArgumentError, InvalidWireMessageError } from "../errors/errors.js";
import { sleep } from "../time/clock.js";
import type { Transport } from "../bus/transport.js";
import type { JsonObject } from "../message/json.js";
import { composeControl, type EnvelopeContext } from "../process/envelope.js";
import { checkExpiresInMs } from "../process/pause-deadline.js";
import type { Pause } from "../process/pause.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { assertApprover, assertReason, isPlainReason } from "../process/decision-text.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { StateStore } from "../state/state-store.js";
import { listClusterSuspended } from "./cluster-suspensions.js";
import { suspendedAgent, type SuspendedAgent } from "./suspended-agent.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";

/** Options of {@link Runtime.suspend} and {@link Runtime.resume}: how long to wait for the agent to act. */
export interface ControlOptions {
  /**
   * Give up waiting after this long (`ASK_TIMEOUT`). The request stays queued:
   * the agent still acts on it when it gets to it. @defaultValue no limit
   */
  timeoutMs?: number;
  /** Stop waiting when aborted (rejects with `signal.reason`); the request stays queued. */
  signal?: AbortSignal;
}

/** Options of {@link Runtime.suspend}. */
export interface SuspendOptions extends ControlOptions {
  /**
   * How long the pause may last: once this long has passed (on the
   * runtime's clock, also while the process was down) the pause is denied by
   * decider `"expiry"`. On an agent already suspended it replaces the
   * pause's deadline; left out there, the deadline is kept. @defaultValue no deadline
   */
  expiresInMs?: number;
}

/** Options of {@link Runtime.deny}. */
export interface DenyOptions extends ControlOptions {
  /**
   * The suspension this denial was made for. When the agent is no longer
   * suspended under it, the deny rejects with `STALE_APPROVAL` and changes nothing.
   */
  suspensionId?: string;
  /** Why it was denied: recorded in the `agent.deny` receipt and passed to `onDeny`. @defaultValue "" */
  reason?: string;
}

/** Options of {@link Runtime.resume}. */
export interface ResumeOptions extends ControlOptions {
  /**
   * Resume even though the agent's code identity (its class's static
   * `version`, its capabilities) changed while it was suspended; the resume's
   * receipt records the change. Without it such a resume rejects with
   * `IDENTITY_CHANGED`. @defaultValue false
   */
  acceptIdentityChange?: boolean;
  /**
   * The suspension this approval was given for. When the agent is no longer
   * suspended under it (resumed already, or suspended again since), the
   * resume rejects with `STALE_APPROVAL` and changes nothing.
   */
  suspensionId?: string;
}

/** Options of {@link Runtime.listSuspended}. */
export interface ListSuspendedOptions {
  /**
   * `"local"`: the agents this runtime supervises, from memory, synchronously.
   * `"cluster"`: every agent in the runtime's shared store, wherever it runs,
   * from the store's marker column in one query — a Promise, and only with a
   * `PostgresStateStore` (or a fenced view of one).
   * @defaultValue "local"
   */
  scope?: "local" | "cluster";
}
/** A control call, as its errors name it. */
type ControlCall = "suspend" | "resume" | "deny";

/**
 * `suspend('payer')`: a control call as its errors name it. Built only for
 * an error: on the way to a valid request each would be a string concatenation.
 */
function callName(call: ControlCall, name: string): string {
  return `${call}('${name}')`;
}

/** Refuses options given as anything but an object (`null`, a number) with `INVALID_ARGUMENT`; `call` names the call in the error. */
function checkOptionsObject(call: string | (() => string), options: unknown): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError("options", `${typeof call === "string" ? call : call()}: options must be an object (or left out), got ${describeValue(options)}`);
  }
}

function checkSuspensionId(call: ControlCall, name: string, suspensionId: unknown): void {
  if (suspensionId !== undefined && (typeof suspensionId !== "string" || suspensionId.length === 0)) {
    throw new InvalidArgumentError("suspensionId", `${callName(call, name)}: suspensionId must be a non-empty string, got ${describeValue(suspensionId)}`);
  }
}

/**
 * The payload of the `_agency.suspend` request of `suspend(name, reason, options)`.
 * @throws {@link InvalidArgumentError} for options that are not an object, a bad reason or `expiresInMs`
 */
function suspendPayload(name: string, reason: string, options: SuspendOptions): JsonObject {
  checkOptionsObject(() => callName("suspend", name), options);
  if (!isPlainReason(reason)) assertReason(callName("suspend", name), reason);
  const expiresInMs = options.expiresInMs === undefined ? undefined : checkExpiresInMs(callName("suspend", name), options.expiresInMs);
  return expiresInMs === undefined ? { reason } : { reason, expiresInMs };
}

/**
 * The payload of the `_agency.resume` request of `resume(name, approver, options)`.
 * @throws {@link InvalidArgumentError} for options that are not an object or a bad `suspensionId`;
 * `INVALID_APPROVER` for a bad approver
 */
function resumePayload(name: string, approver: string, options: ResumeOptions): JsonObject {
  checkOptionsObject(() => callName("resume", name), options);
  assertApprover(name, approver);
  const suspensionId = options.suspensionId;
  checkSuspensionId("resume", name, suspensionId);
  const payload: JsonObject = { approver };
  if (suspensionId !== undefined) payload.suspensionId = suspensionId;
  if (options.acceptIdentityChange === true) payload.acceptIdentityChange = true;
  return payload;
}

/**
 * The payload of the `_agency.resume` request of `deny(name, decider, options)`:
 * a denial travels as a resume request with decision `"deny"`, so it takes the
 * same path, checks and ordering.
 * @throws {@link InvalidArgumentError} for options that are not an object, a bad `suspensionId`
 * or reason; `INVALID_APPROVER` for a bad decider
 */
function denyPayload(name: string, decider: string, options: DenyOptions): JsonObject {
  checkOptionsObject(() => callName("deny", name), options);
  assertApprover(name, decider, "deny");
  const { suspensionId, reason } = options;
  checkSuspensionId("deny", name, suspensionId);
  if (reason !== undefined && !isPlainReason(reason)) assertReason(callName("deny", name), reason);
  const payload: JsonObject = { approver: decider, decision: "deny" };
  if (suspensionId !== undefined) payload.suspensionId = suspensionId;
  if (reason !== undefined) payload.reason = reason;
  return payload;
}

/**
 * What `listSuspended(options)` answers: the SUSPENDED agents of `registry`
 * (`"local"`), or every suspension `store` records (`"cluster"`, a Promise).
 * @throws {@link InvalidArgumentError} for options that are not an object or a `scope` other than `"local"`/`"cluster"`
 * @internal
 */
export function listSuspendedAgents(registry: Registry<AgentProcess>, store: StateStore, options: ListSuspendedOptions): SuspendedAgent[] | Promise<SuspendedAgent[]> {
  checkOptionsObject("listSuspended()", options);
  const scope: unknown = options.scope === undefined ? "local" : options.scope; // null is refused, not defaulted
  if (scope === "cluster") return listClusterSuspended(store);
  if (scope !== "local") {
    throw new InvalidArgumentError("scope", `listSuspended({ scope }): scope must be "local" (this runtime's agents) or "cluster" (every agent in the shared store), got ${describeValue(scope)}`);
  }
  const suspended: SuspendedAgent[] = [];
  for (const agent of registry.all()) {
    const marker = agent.suspension;
    if (agent.status === ProcessStatus.SUSPENDED && marker !== undefined) {
      suspended.push(suspendedAgent(agent.name, marker));
    }
  }
  return suspended;
}

/** How long a suspend or resume of an agent in another process waits for its owner's answer when no `timeoutMs` is given. */
const REMOTE_CONTROL_TIMEOUT_MS = 30_000;
/** How often control of an agent known only to the store looks for its owner on the bus. */
const OWNER_POLL_MS = 100;

/**
 * What the control calls use of their runtime: its services, where its
 * requests are composed (sender `_runtime`), and its check that it takes calls.
 * @internal
 */
export interface ControlPath {
  readonly services: RuntimeServices;
  readonly outside: EnvelopeContext;
  /** Whether the runtime takes calls now (started, not stopping): when it does not, {@link ControlPath.assertStarted} says why. */
  readonly takesCalls: () => boolean;
  /** Throws `RUNTIME_NOT_STARTED` or `RUNTIME_STOPPED` for `call` when the runtime takes no calls. */
  readonly assertStarted: (call: string) => void;
}

/**
 * Sends a runtime control request on the priority lane; the returned
 * promise resolves once the agent has acted on it. The agent waits for
 * this very promise to settle before it takes its next message. An agent
 * another runtime hosts is sent the request through the transport, and
 * that runtime answers.
 */
function sendControl(path: ControlPath, name: string, type: "_agency.suspend" | "_agency.resume", payload: JsonObject, options: ControlOptions, call: ControlCall): Promise<unknown> {
  const { services } = path;
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0)) {
    throw new InvalidArgumentError("timeoutMs", `${callName(call, name)}: timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`);
  }
  if (services.registry.find(name) === undefined) {
    const transport = services.bus.transport;
    if (transport === undefined) throw notFound(name);
    const operation = type === "_agency.suspend" ? "suspend" : "resume";
    if (!transport.hosts(name)) return controlOwnerless(path, transport, name, operation, payload, options, call);
    path.assertStarted(callName(call, name));
    // The runtime that hosts the agent decides, receipts and answers (see docs/nats.md); a deny travels as a
    // resume with decision "deny", as it does in one process.
    return transport.control(name, operation, payload, timeoutMs ?? REMOTE_CONTROL_TIMEOUT_MS, options.signal).then((answer) => remoteAnswer(name, operation, answer));
  }
  if (!path.takesCalls()) path.assertStarted(callName(call, name));
  payload.sent = ++services.controlSent.count;
  return services.bus.control(composeControl(path.outside, name, type, payload), timeoutMs, options.signal);
}

/**
 * Control of an agent no runtime on the bus announces: `AGENT_NOT_FOUND`
 * when the state store has no record of it either; else its owner is gone
 * (or still starting), so this waits until the deadline for an owner to
 * announce it and sends the request then, or rejects with
 * `AGENT_UNREACHABLE`, saying that the store knows the agent but no owner answered.
 */
async function controlOwnerless(path: ControlPath, transport: Transport, name: string, operation: "suspend" | "resume", payload: JsonObject, options: ControlOptions, call: ControlCall): Promise<unknown> {
  const { services } = path;
  if ((await services.store.get(name)) === undefined) throw notFound(name);
  path.assertStarted(callName(call, name));
  const timeoutMs = options.timeoutMs ?? REMOTE_CONTROL_TIMEOUT_MS;
  const deadline = services.clock.now() + timeoutMs;
  while (!transport.hosts(name)) {
    if (services.clock.now() >= deadline) throw new AgentUnreachableError(name, timeoutMs, "store");
    await sleep(services.clock, OWNER_POLL_MS, options.signal);
  }
  return remoteAnswer(name, operation, await transport.control(name, operation, payload, Math.max(1, deadline - services.clock.now()), options.signal));
}

/**
 * What a control call of an agent another runtime hosts resolves with: for
 * a suspend, the pause that runtime answered with (`{ suspensionId,
 * expiresAt? }`); nothing for the others.
 * @throws {@link InvalidWireMessageError} for a suspend answer without a pause (a runtime of an older version)
 */
function remoteAnswer(name: string, operation: "suspend" | "resume", answer: JsonObject): Pause | undefined {
  if (operation !== "suspend") return undefined;
  const { suspensionId, expiresAt } = answer;
  if (typeof suspensionId !== "string" || (expiresAt !== undefined && typeof expiresAt !== "string")) {
    throw new InvalidWireMessageError(`the runtime hosting '${name}' suspended it but answered without the pause (${describeValue(answer)}); run the same civitas-ts version in every process`);
  }
  return expiresAt === undefined ? { suspensionId } : { suspensionId, expiresAt };
}

/**
 * `runtime.suspend(name, reason, options)`: checks what was passed, then sends
 * the request through `path`, and resolves with the pause. Never throws: a
 * refusal is a rejected promise.
 * @internal
 */
export function suspendAgent(path: ControlPath, name: string, reason: string, options: SuspendOptions): Promise<Pause> {
  try {
    // Resolves with what the agent acknowledged with (the pause: see SuspensionControl.applySuspendRequest), or what its owner answered.
    return sendControl(path, name, "_agency.suspend", suspendPayload(name, reason, options), options, "suspend") as Promise<Pause>;
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
    return Promise.reject(error);
  }
}

/**
 * `runtime.resume(name, approver, options)`: checks what was passed, then
 * sends the request through `path`. Never throws: a refusal is a rejected promise.
 * @internal
 */
export function resumeAgent(path: ControlPath, name: string, approver: string, options: ResumeOptions): Promise<void> {
  try {
    return sendControl(path, name, "_agency.resume", resumePayload(name, approver, options), options, "resume") as Promise<void>;
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
    return Promise.reject(error);
  }
}

/**
 * `runtime.deny(name, decider, options)`: checks what was passed, then sends
 * the request (a resume with decision `"deny"`) through `path`. Never throws:
 * a refusal is a rejected promise.
 * @internal
 */
export function denyAgent(path: ControlPath, name: string, decider: string, options: DenyOptions): Promise<void> {
  try {
    return sendControl(path, name, "_agency.resume", denyPayload(name, decider, options), options, "deny") as Promise<void>;
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
    return Promise.reject(error);
  }
}
