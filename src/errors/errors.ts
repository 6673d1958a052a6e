import { CivitasError, describeValue } from "./civitas-error.js";

/**
 * No agent is registered under the name (or with the capability) a message
 * was addressed to; or `checkpoint()` of an agent removed for good.
 */
export class AgentNotFoundError extends CivitasError {
  /** The name or capability that was looked up. */
  readonly agent: string;
  constructor(agent: string, message: string) {
    super("AGENT_NOT_FOUND", message);
    this.agent = agent;
  }
}

/** An `ask` got no reply within its `timeoutMs`. */
export class AskTimeoutError extends CivitasError {
  /** The agent that was asked. */
  readonly agent: string;
  /** The timeout that elapsed. */
  readonly timeoutMs: number;
  constructor(agent: string, timeoutMs: number) {
    super(
      "ASK_TIMEOUT",
      `ask('${agent}') got no reply within ${timeoutMs} ms; raise timeoutMs, or check that '${agent}' returns this.reply(...) from handle()`,
    );
    this.agent = agent;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A put or get on a mailbox that has been closed (its agent stopped for
 * good), or a request (an ask, a suspend or resume) that was still queued
 * in it when it closed.
 */
export class MailboxClosedError extends CivitasError {
  constructor(message = "the mailbox is closed: its agent has stopped and takes no more messages") {
    super("MAILBOX_CLOSED", message);
  }
}

/**
 * An agent sent itself a message while its own code ran (`handle()`,
 * `onStart`, a hook) or its loop was busy, and its mailbox lane was full:
 * waiting for room would wait forever, since only the loop waiting for that
 * very code can make it.
 */
export class MailboxFullError extends CivitasError {
  /** The agent whose mailbox was full. */
  readonly agent: string;
  constructor(agent: string) {
    super(
      "MAILBOX_FULL",
      `'${agent}' sent itself a message while its own code ran (handle(), onStart, a hook) or its loop was busy, and its mailbox was full; it would wait forever for room only its own loop can make. Raise mailboxSize, carry the work on in the current handler, or retry the send later`,
    );
    this.agent = agent;
  }
}

/** A stored state record has an unknown schema version or is malformed. */
export class StateSchemaError extends CivitasError {
  /** The agent whose record was refused. */
  readonly agent: string;
  constructor(agent: string, message: string, options?: ErrorOptions) {
    super("STATE_SCHEMA", message, options);
    this.agent = agent;
  }
}

/** Application code tried to send a message type reserved for the runtime (`_agency.*`). */
export class ReservedMessageTypeError extends CivitasError {
  /** The reserved type that was refused. */
  readonly type: string;
  constructor(type: string) {
    super(
      "RESERVED_MESSAGE_TYPE",
      `message type '${type}' is reserved for the runtime; use runtime.suspend()/resume()/stop() for control, or pick a type that does not start with '_agency.'`,
    );
    this.type = type;
  }
}

/** A payload (or state) is not a plain JSON-serializable object. */
export class PayloadNotSerializableError extends CivitasError {
  /** Where in the value the problem is, as a JSON path (`$.items[2].at`). */
  readonly path: string;
  constructor(path: string, message: string) {
    super("PAYLOAD_NOT_SERIALIZABLE", message);
    this.path = path;
  }
}

/** A wire-form message could not be decoded (malformed, or an unknown `schema_version`). */
export class InvalidWireMessageError extends CivitasError {
  constructor(message: string, options?: ErrorOptions) {
    super("INVALID_WIRE_MESSAGE", message, options);
  }
}

/** An argument or option is out of range or of the wrong type. */
export class InvalidArgumentError extends CivitasError {
  /** The name of the argument or option that was refused. */
  readonly argument: string;
  constructor(argument: string, message: string) {
    super("INVALID_ARGUMENT", message);
    this.argument = argument;
  }
}

/** Two agents or supervisors in one runtime share a name. */
export class DuplicateNameError extends CivitasError {
  /** The name that is used twice. */
  readonly agent: string;
  constructor(agent: string, message: string) {
    super("DUPLICATE_NAME", message);
    this.agent = agent;
  }
}

/** A topology description is invalid; the message names the offending entry. */
export class TopologyError extends CivitasError {
  /** Path of the offending entry, e.g. `supervisor.children[1].agent.type`. */
  readonly path: string;
  constructor(path: string, message: string, options?: ErrorOptions) {
    super("TOPOLOGY_INVALID", `${path}: ${message}`, options);
    this.path = path;
  }
}

/** A child failed to start (its `onStart` threw, or its state was refused). */
export class StartFailedError extends CivitasError {
  /** The child that failed. */
  readonly agent: string;
  constructor(agent: string, options?: ErrorOptions) {
    const cause = options?.cause instanceof Error ? `: ${options.cause.message}` : "";
    super("START_FAILED", `'${agent}' failed to start${cause}`, options);
    this.agent = agent;
  }
}

/** The operation needs a runtime state the runtime is not in (not started, already stopped). */
export class RuntimeStateError extends CivitasError {
  constructor(code: "RUNTIME_NOT_STARTED" | "RUNTIME_STOPPED", message: string) {
    super(code, message);
  }
}

/** A `DynamicSupervisor` is at its `maxChildren` bound. */
export class MaxChildrenError extends CivitasError {
  /** The supervisor that is full. */
  readonly supervisor: string;
  /** Its bound. */
  readonly maxChildren: number;
  constructor(supervisor: string, maxChildren: number) {
    super(
      "MAX_CHILDREN",
      `dynamic supervisor '${supervisor}' already has ${maxChildren} children (maxChildren); despawn one or raise maxChildren`,
    );
    this.supervisor = supervisor;
    this.maxChildren = maxChildren;
  }
}

/** `spawn`/`despawn`/`stop` was called from an agent that is not under a `DynamicSupervisor`. */
export class NoDynamicSupervisorError extends CivitasError {
  /** The agent that asked. */
  readonly agent: string;
  constructor(agent: string, message: string) {
    super("NO_DYNAMIC_SUPERVISOR", message);
    this.agent = agent;
  }
}

/** An agent or supervisor cannot do what was asked in its current status. */
export class IllegalTransitionError extends CivitasError {
  /** The agent concerned. */
  readonly agent: string;
  /** Its status at the time. */
  readonly from: string;
  /** The status that was refused. */
  readonly to: string;
  constructor(agent: string, from: string, to: string) {
    super(
      "ILLEGAL_TRANSITION",
      `'${agent}' cannot go from ${from} to ${to}; this is a bug in civitas-ts or in code that drives an agent by hand — please report it`,
    );
    this.agent = agent;
    this.from = from;
    this.to = to;
  }
}

/** A supervisor restarted its children more than `maxRestarts` times within `restartWindowMs` and gave up. */
export class RestartIntensityError extends CivitasError {
  /** The supervisor that gave up. */
  readonly supervisor: string;
  constructor(supervisor: string, maxRestarts: number, restartWindowMs: number, options?: ErrorOptions) {
    super(
      "RESTART_INTENSITY",
      `supervisor '${supervisor}' exceeded ${maxRestarts} restarts within ${restartWindowMs} ms and gave up; fix the crashing child or raise maxRestarts`,
      options,
    );
    this.supervisor = supervisor;
  }
}

/**
 * `resume` was called without a usable approver: a string naming who
 * approved, with at least one visible character and no control characters,
 * lone surrogates or bidi overrides, at most 1,024 characters long.
 */
export class InvalidApproverError extends CivitasError {
  /** The agent that was to be resumed. */
  readonly agent: string;
  /**
   * @param call - the call refused: `resume` (an approver) or `deny` (a decider) @defaultValue "resume"
   * @param problem - what is wrong with a legible string (too long), in place of showing it
   */
  constructor(agent: string, approver: unknown, call: "resume" | "deny" = "resume", problem?: string) {
    const who = call === "deny" ? `deny('${agent}') needs a decider naming who denied` : `resume('${agent}') needs an approver naming who approved`;
    super(
      "INVALID_APPROVER",
      problem !== undefined
        ? `${who}, but ${problem}`
        : call === "deny"
          ? `${who} (a string with at least one visible character and no control characters), got ${describeValue(approver)}`
          : `${who} (a string with at least one visible character and no control characters), got ${describeValue(approver)}; a pending action is never authorization by itself`,
    );
    this.agent = agent;
  }
}

/** A resume named a suspension that is no longer the agent's current one (already settled, or superseded). */
export class StaleApprovalError extends CivitasError {
  /** The agent concerned. */
  readonly agent: string;
  /** The suspension the approval was given for. */
  readonly suspensionId: string;
  /**
   * @param call - the call refused: `resume` or `deny` @defaultValue "resume"
   * @param why - why the pause is gone, when known (it was decided first by another decision) @defaultValue "the agent is not suspended"
   */
  constructor(agent: string, suspensionId: string, current: string | undefined, call: "resume" | "deny" = "resume", why = "the agent is not suspended") {
    super(
      "STALE_APPROVAL",
      `${call}('${agent}') ${call === "deny" ? "denies" : "approves"} suspension ${suspensionId}, but ${current === undefined ? why : `the agent is suspended under ${current}`}; ${call === "deny" ? "a denial settles only the pause it was made for — look at the current pause (runtime.listSuspended()) and decide on it" : "an approval lifts only the pause it was given for — ask for a fresh one"}`,
    );
    this.agent = agent;
    this.suspensionId = suspensionId;
  }
}

/** The runtime's `authorizeResume` hook refused (or failed, kept as `cause`). */
export class ResumeRefusedError extends CivitasError {
  /** The agent concerned. */
  readonly agent: string;
  /** The approver that was refused. */
  readonly approver: string;
  /** @param call - the call refused: `resume` or `deny` @defaultValue "resume" */
  constructor(agent: string, approver: string, options?: ErrorOptions, call: "resume" | "deny" = "resume") {
    super("RESUME_REFUSED", `authorizeResume refused to let '${approver}' ${call} '${agent}'; the agent stays SUSPENDED`, options);
    this.agent = agent;
    this.approver = approver;
  }
}

/** `ask(..., { failIfSuspended: true })` to an agent that is SUSPENDED. */
export class AgentSuspendedError extends CivitasError {
  /** The suspended agent. */
  readonly agent: string;
  constructor(agent: string) {
    super("AGENT_SUSPENDED", `'${agent}' is SUSPENDED and awaits approval; resume it first, or ask without failIfSuspended to wait for it`);
    this.agent = agent;
  }
}

/** A resume was refused because its `agent.resume` receipt could not be recorded: no approved action without its receipt. */
export class AuditUnavailableError extends CivitasError {
  /** The agent that stays SUSPENDED. */
  readonly agent: string;
  /** @param call - the call refused: `resume` or `deny` @defaultValue "resume" */
  constructor(agent: string, call: "resume" | "deny" = "resume") {
    super("AUDIT_UNAVAILABLE", `the audit sink could not record the ${call} receipt of '${agent}', so the ${call} was refused and the agent stays SUSPENDED; fix the sink and ${call} again`);
    this.agent = agent;
  }
}

/** The agent's code identity (its class `version` or capabilities) changed while it was suspended. */
export class IdentityChangedError extends CivitasError {
  /** The agent concerned. */
  readonly agent: string;
  constructor(agent: string, from: string, to: string) {
    super(
      "IDENTITY_CHANGED",
      `'${agent}' was suspended as ${from} but is now ${to}; the approval was given to the former. Ask for a fresh approval, or resume with { acceptIdentityChange: true } to record that the approver accepts the change`,
    );
    this.agent = agent;
  }
}

/**
 * The message bus between processes (the NATS server) could not be used: the
 * transport could not connect, its connection was down for longer than the
 * send was willing to wait, or it is closed.
 */
export class TransportUnavailableError extends CivitasError {
  constructor(message: string, options?: ErrorOptions) {
    super("TRANSPORT_UNAVAILABLE", message, options);
  }
}

/** A control request for an agent another runtime hosts found no live owner before its deadline: nothing was done. */
export class AgentUnreachableError extends CivitasError {
  /** The agent whose owner did not answer. */
  readonly agent: string;
  /**
   * `knownFrom` says how this runtime knows the agent exists: announced on
   * the bus (the default), or only as a record in the state store, its owner
   * being gone from the bus.
   */
  constructor(agent: string, timeoutMs: number, knownFrom: "bus" | "store" = "bus") {
    const known = knownFrom === "store" ? "is known to the state store (its state and any pause are kept there) but no runtime on the bus hosts it" : "is announced on the bus but no runtime hosting it answered its control subject";
    super("AGENT_UNREACHABLE", `'${agent}' ${known} within ${timeoutMs} ms; nothing was done — check that its runtime is running (start it, and it restores the agent from the store), then retry`);
    this.agent = agent;
  }
}

/**
 * A control request reached the runtime that hosts the agent but no answer
 * came back in time: it may still take effect. Retry with the same request
 * (it carries a `requestId`) to learn the outcome without a second effect.
 */
export class ControlTimeoutError extends CivitasError {
  /** The agent the request was for. */
  readonly agent: string;
  constructor(agent: string, timeoutMs: number) {
    super("CONTROL_TIMEOUT", `the control request for '${agent}' was sent but no answer came within ${timeoutMs} ms; it may still take effect — check the agent's status, or retry`);
    this.agent = agent;
  }
}

/**
 * A control request for an agent of another runtime was refused there; `code`
 * is the refusal's own code (`STALE_APPROVAL`, `RESUME_REFUSED`,
 * `IDENTITY_CHANGED`, `AUDIT_UNAVAILABLE` …) and `message` its message.
 */
export class RemoteControlError extends CivitasError {
  /** The agent the request was for. */
  readonly agent: string;
  constructor(agent: string, code: string, message: string) {
    super(code, `${message} (refused by the runtime hosting '${agent}')`);
    this.agent = agent;
  }
}

/**
 * A write to a shared store was refused because another process now owns the
 * record: the row carries a newer fence than the writer's (a takeover claimed
 * it). Nothing was changed. The writer has lost ownership and must stop; a
 * runtime that gets it from a persist stops the agent at once (`agent.fenced`).
 */
export class StateFencedError extends CivitasError {
  /** The record (agent name) the write was for. */
  readonly agent: string;
  /** The writer's fence. */
  readonly fence: number;
  /** The fence the row carries, when known. */
  readonly currentFence: number | undefined;
  constructor(agent: string, fence: number, currentFence: number | undefined, message?: string) {
    super(
      "STATE_FENCED",
      message ??
        `the write to '${agent}' with fence ${fence} was refused: the row is owned by fence ${currentFence === undefined ? "(a newer one)" : String(currentFence)}, so another process took it over; nothing was changed. Stop this owner; the new one holds the state`,
    );
    this.agent = agent;
    this.fence = fence;
    this.currentFence = currentFence;
  }
}

/**
 * `runtime.listSuspended({ scope: "cluster" })` on a runtime whose store
 * cannot answer for the cluster: only a store shared by every process (a
 * `PostgresStateStore` from `civitas-ts/postgres`, or a fenced view of one)
 * records the pauses of agents that run elsewhere. Nothing was queried.
 */
export class ClusterScopeUnsupportedError extends CivitasError {
  /** The class name of the runtime's store (`InMemoryStateStore`, `SqliteStateStore` …). */
  readonly store: string;
  constructor(store: string) {
    super(
      "CLUSTER_SCOPE_UNSUPPORTED",
      `listSuspended({ scope: "cluster" }) needs a state store shared by the cluster that lists its suspensions — a PostgresStateStore from civitas-ts/postgres (or its fenced(fence) view) — but this runtime's store is ${store}; pass such a store as new Runtime({ store }), or call listSuspended() for this runtime's own agents`,
    );
    this.store = store;
  }
}
