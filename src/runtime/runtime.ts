import { context, trace, type TracerProvider } from "@opentelemetry/api";
import { EventEmitter } from "eventemitter3";
import type { AuditSink } from "../audit/audit-event.js";
import { MessageBus, notFound } from "../bus/message-bus.js";
import { assertValidName, Registry } from "../bus/registry.js";
import type { Transport, TransportHost } from "../bus/transport.js";
import { describeValue } from "../errors/civitas-error.js";
import { AgentSuspendedError, DuplicateNameError, InvalidArgumentError, ReservedMessageTypeError, RuntimeStateError, TopologyError } from "../errors/errors.js";
import { stderrLogger, type Logger } from "../logging/logger.js";
import type { JsonObject, JsonPayload } from "../message/json.js";
import type { Message } from "../message/message.js";
import { DEFAULT_MESSAGE_TYPE, isReservedType } from "../message/system-types.js";
import { Telemetry } from "../observability/telemetry.js";
import { AgentProcess } from "../process/agent-process.js";
import { composeControl, composeOutgoing, type EnvelopeContext } from "../process/envelope.js";
import { ProcessStatus } from "../process/process-status.js";
import { assertApprover, assertReason } from "../process/suspension.js";
import { checkExpiresInMs } from "../process/pause-deadline.js";
import { InMemoryStateStore } from "../state/in-memory-state-store.js";
import type { StateStore } from "../state/state-store.js";
import { attachChild, closeChild, startChild, stopChild, type ChildExit, type ChildParent, type SupervisedChild } from "../supervision/child.js";
import { DynamicSupervisor } from "../supervision/dynamic-supervisor.js";
import { Supervisor } from "../supervision/supervisor.js";
import { systemClock, type Clock } from "../time/clock.js";
import type { RuntimeEvents } from "./runtime-events.js";
import { Scheduler } from "./scheduler.js";
import { joiningSimulation } from "./simulation-hooks.js";
import type { AuthorizeResume, RuntimeServices } from "./services.js";
import { checkRuntimeOptions } from "./check-runtime-options.js";
import { buildTopology, type AgentClasses } from "./topology.js";
import { attachTransport } from "./transport-host.js";
import { listClusterSuspended } from "./cluster-suspensions.js";
import { readStatesAhead } from "../state/read-ahead.js";

/** Options of a {@link Runtime}. */
export interface RuntimeOptions {
  /** The tree to run: a supervisor, an agent, or a list of them (wrapped in a ONE_FOR_ONE supervisor named `root`). */
  root: SupervisedChild | readonly SupervisedChild[];
  /** Where checkpointed state lives. @defaultValue a new {@link InMemoryStateStore} (not durable) */
  store?: StateStore;
  /** Where audit events go. @defaultValue none */
  auditSink?: AuditSink;
  /** Identity recorded as `signerId` in audit events. @defaultValue "civitas-runtime" */
  signerId?: string;
  /** OpenTelemetry tracer provider. @defaultValue the globally registered one, if any */
  tracerProvider?: TracerProvider;
  /** Receives what nobody else can observe. @defaultValue warnings and errors to stderr */
  logger?: Logger;
  /** Time source. @defaultValue the system clock */
  clock?: Clock;
  /**
   * Keep the Node process alive from `start()` until `stop()`, as a server's
   * open socket does: restarts, backoff and ask timeouts run on timers that
   * do not hold the process open by themselves. @defaultValue true
   */
  keepAlive?: boolean;
  /** Lets a governance layer refuse a resume (`RESUME_REFUSED`); called only while the agent is SUSPENDED. */
  authorizeResume?: AuthorizeResume;
  /**
   * Connects this runtime to runtimes in other processes (`NatsTransport`
   * from `civitas-ts/nats`): agents are then addressed by name wherever
   * they run. `start()` connects it before the tree starts; `stop()` lets go
   * of it after the tree stopped. @defaultValue none: in process only
   */
  transport?: Transport;
}

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

/** One suspended agent, as {@link Runtime.listSuspended} reports it. */
export interface SuspendedAgent {
  /** The agent's name. */
  readonly name: string;
  /** Why it was suspended (the latest reason, when suspended again). */
  readonly reason: string;
  /** When the pause began, ISO-8601 UTC with milliseconds. */
  readonly since: string;
  /** Names this pause; pass it to `resume` so an approval cannot settle a later pause. */
  readonly suspensionId: string;
  /** When the pause is denied by `"expiry"`, ISO-8601 UTC, when it has a deadline. */
  readonly expiresAt?: string;
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

/** Options of {@link Runtime.send}. */
export interface RuntimeSendOptions {
  /** The message type. @defaultValue "message" */
  type?: string;
  /** Discard the message if it waits in the mailbox longer than this. */
  ttlMs?: number;
  /** Aborts a send that waits for room in a full mailbox. */
  signal?: AbortSignal;
}

/** Options of {@link Runtime.ask}. */
export interface RuntimeAskOptions extends RuntimeSendOptions {
  /** How long to wait for the reply. @defaultValue 30000 */
  timeoutMs?: number;
  /** Reject at once with `AGENT_SUSPENDED` when the agent is SUSPENDED, instead of waiting for its resume. @defaultValue false */
  failIfSuspended?: boolean;
}

/** Options of {@link Runtime.fromTopology}: the runtime options plus the agent classes a topology may name. */
export interface FromTopologyOptions extends Omit<RuntimeOptions, "root"> {
  /** Agent classes by the name the topology uses in `type`. */
  agents: AgentClasses;
}

const OUTSIDE_SENDER = "_runtime";

/** How long a suspend or resume of an agent in another process waits for its owner's answer when no `timeoutMs` is given. */
const REMOTE_CONTROL_TIMEOUT_MS = 30_000;

/**
 * Runs a supervision tree: starts it, routes messages into it, stops it.
 * It is an `EventEmitter` of {@link RuntimeEvents}.
 *
 * @example
 * ```ts
 * const runtime = new Runtime({
 *   root: new Supervisor("root", { children: [new Greeter("greeter")] }),
 *   store: new SqliteStateStore("state.db"),
 * });
 * await runtime.start();
 * const reply = await runtime.ask("greeter", { name: "Ada" });
 * await runtime.stop();
 * ```
 */
export class Runtime extends EventEmitter<RuntimeEvents> implements ChildParent {
  /** Name of the runtime as a parent of its root: `"runtime"`. */
  readonly name = "runtime";
  /** The root of the tree. */
  readonly root: SupervisedChild;
  private readonly services: RuntimeServices;
  /** Where messages sent from outside the tree are composed: sender `_runtime`; `span` is set to the caller's active span when tracing. */
  private readonly outside: { -readonly [K in keyof EnvelopeContext]: EnvelopeContext[K] };
  private starting: Promise<void> | undefined;
  /** Set when `start()` failed: the tree was stopped again and takes no messages. */
  private startFailed = false;
  private stopping: Promise<void> | undefined;
  /** Aborted when `stop()` begins (see {@link RuntimeServices.stopping}). */
  private readonly stopSignal = new AbortController();
  private readonly keepAlive: boolean;
  private aliveHandle: NodeJS.Timeout | undefined;
  /** The transport's way into this runtime, when it has one. */
  private readonly transportHost: TransportHost | undefined;

  /**
   * Builds the runtime and registers every name in the tree. The whole tree
   * is checked before anything is registered: when the constructor throws,
   * no agent or supervisor has been attached, so all of them can still be
   * used in another runtime.
   * @throws {@link DuplicateNameError} (`DUPLICATE_NAME`) when two agents or supervisors share a name
   * @throws {@link InvalidArgumentError} for a bad option, an agent or supervisor that already
   * belongs to a runtime, or one that appears twice in the tree
   */
  constructor(options: RuntimeOptions) {
    super();
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `new Runtime() needs an options object with a root, got ${describeValue(options)}`);
    }
    checkRuntimeOptions(options);
    this.root = rootOf(options.root);
    checkTree(this.root);
    this.keepAlive = options.keepAlive ?? true;
    const clock = options.clock ?? systemClock;
    const logger = options.logger ?? stderrLogger;
    const registry = new Registry();
    const store = options.store ?? new InMemoryStateStore();
    if (!store.durable) {
      logger.warn("state store is not durable: checkpoints are lost when this process ends; use SqliteStateStore from civitas-ts/sqlite to keep them");
    }
    const simulation = joiningSimulation();
    this.services = {
      registry,
      bus: new MessageBus(registry, clock, this),
      store,
      clock,
      logger,
      telemetry: new Telemetry(options.tracerProvider, options.auditSink, options.signerId ?? "civitas-runtime", clock, logger),
      scheduler: simulation?.scheduler ?? new Scheduler(),
      events: this,
      authorizeResume: options.authorizeResume,
      expired: (message) => {
        // Reported from inside an agent loop's dequeue: a listener's bug must not crash the agent.
        try {
          logger.warn(`message ${message.id} to '${message.recipient}' expired after ${message.ttlMs} ms in the mailbox and was discarded`);
          this.emit("message.expired", message);
        } catch (error) {
          logger.error(`a 'message.expired' listener threw for message ${message.id} to '${message.recipient}'`, { error });
        }
      },
      stopping: this.stopSignal.signal,
      controlSent: { count: 0 },
    };
    if (simulation !== undefined) this.services.bus.replyGate = simulation.settleReply;
    this.outside = { sender: OUTSIDE_SENDER, clock, current: undefined, span: undefined };
    this.transportHost = options.transport === undefined ? undefined : attachTransport(options.transport, this.services, this);
    this.root[attachChild](this, this.services);
  }

  /**
   * Builds a runtime from a topology: YAML text or the equivalent object.
   * @throws {@link TopologyError} (`TOPOLOGY_INVALID`) naming the offending entry, or `options`
   * when the options (with their `agents`) are missing
   * @example
   * ```ts
   * const runtime = Runtime.fromTopology(yamlText, { agents: { Greeter }, store });
   * ```
   */
  static fromTopology(topology: string | object, options: FromTopologyOptions): Runtime {
    if (typeof options !== "object" || (options as unknown) === null) {
      throw new TopologyError(
        "options",
        `Runtime.fromTopology(topology, options) needs an options object with the agent classes the topology names, e.g. { agents: { Greeter } }; got ${describeValue(options)}`,
      );
    }
    const { agents, ...rest } = options;
    return new Runtime({ ...rest, root: buildTopology(topology, agents) });
  }

  /** Starts the root; every agent reads its record as it starts, and a store that can reads them all in one go first. */
  private startTree(): Promise<void> {
    const dropUnread = readStatesAhead(this.services.store, this.services.registry.names());
    const started = this.root[startChild]();
    void started.then(dropUnread, dropUnread);
    return started;
  }

  /**
   * Starts the tree, children in order. Resolves once every agent runs and
   * their `agent.start` audit receipts are recorded by the audit sink (for a
   * `JsonlAuditSink`: on disk; at most each agent's `shutdownTimeoutMs` is
   * waited for its receipt). Idempotent: a second call returns the first
   * call's promise.
   */
  start(): Promise<void> {
    if (this.stopping !== undefined) {
      return Promise.reject(new RuntimeStateError("RUNTIME_STOPPED", "this runtime was stopped; create a new Runtime to start again"));
    }
    if (this.starting === undefined) {
      if (this.keepAlive) this.aliveHandle = setInterval(() => undefined, 2 ** 30);
      const transport = this.services.bus.transport;
      const host = this.transportHost;
      // The transport connects and learns the other runtimes' agents before any agent starts and sends.
      const started = transport === undefined || host === undefined ? this.startTree() : transport.start(host).then(() => this.startTree());
      this.starting = started.then(() => this.services.telemetry.flush(), (error: unknown) => {
        this.startFailed = true;
        clearInterval(this.aliveHandle);
        // Asks, suspends and resumes sent before the start would wait for agents that were stopped again.
        this.services.bus.close(new RuntimeStateError("RUNTIME_STOPPED", "the runtime failed to start and stopped its agents again, so no reply will come; fix the cause of START_FAILED and build a new Runtime"));
        throw error;
      });
    }
    return this.starting;
  }

  /**
   * Stops the tree, children in reverse order; queued messages stay unhandled,
   * pending asks reject with `RUNTIME_STOPPED`. Resolves once the agents'
   * `agent.stop` audit receipts are recorded by the audit sink. Idempotent.
   * Never closes the store or audit sink it was given.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /** The agent named `name`, or `undefined`. */
  getAgent(name: string): AgentProcess | undefined {
    return this.services.registry.get(name);
  }

  /** The supervisor (static or dynamic) named `name`, or `undefined`. */
  getSupervisor(name: string): Supervisor | DynamicSupervisor | undefined {
    const supervisor = this.services.registry.supervisor(name);
    return supervisor instanceof Supervisor || supervisor instanceof DynamicSupervisor ? supervisor : undefined;
  }

  /** Every agent in the runtime, in registration order. */
  agents(): AgentProcess[] {
    return this.services.registry.all();
  }

  /** Replies that arrived after their ask gave up, and were dropped. */
  get lateReplies(): number {
    return this.services.bus.lateReplies;
  }

  /**
   * Sends `payload` to the agent named `name` from outside the tree, waiting while its mailbox is full.
   * Rejects with `AGENT_NOT_FOUND`, `RESERVED_MESSAGE_TYPE`, `PAYLOAD_NOT_SERIALIZABLE` or `MAILBOX_CLOSED`;
   * with `RUNTIME_NOT_STARTED` (nothing queued) before `start()` was called, `RUNTIME_STOPPED` after `stop()`.
   * @typeParam T - the payload's type (inferred); it must be JSON ({@link JsonPayload}).
   */
  send<T extends JsonPayload<T> = JsonObject>(name: string, payload: T, options?: RuntimeSendOptions): Promise<void> {
    try {
      return this.services.bus.deliver(this.outgoing(name, payload as JsonObject, options, false), options?.signal);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checking and composing threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Sends a request from outside the tree and resolves with the reply message.
   * Rejects with `ASK_TIMEOUT` after `timeoutMs` (30 s by default); its stack
   * shows the async functions that were awaiting the ask. Rejects at once with
   * `HANDLER_FAILED` (the handler's error as `cause`) when the agent's
   * `handle` threw and `onError` ended the message (`SKIP`, `STOP`,
   * `ESCALATE`, `RETRY` exhausted); with `RUNTIME_NOT_STARTED` (nothing
   * queued) before `start()` was called. While the ask waits, its timeout
   * timer keeps the Node.js process alive, so the ask always settles.
   * @typeParam Req - the request payload's type (inferred); it must be JSON ({@link JsonPayload}).
   * @typeParam Res - the reply payload's type you expect; the reply is not checked against it at run time.
   * @example
   * ```ts
   * interface Payment { invoice: string; amountCents: number }
   * interface Receipt { invoice: string; paid: boolean }
   * const reply = await runtime.ask<Payment, Receipt>("payments", { invoice: "INV-1", amountCents: 4000 });
   * reply.payload.paid; // boolean
   * ```
   */
  ask<Req extends JsonPayload<Req> = JsonObject, Res extends JsonPayload<Res> = JsonObject>(name: string, payload: Req, options?: RuntimeAskOptions): Promise<Message<Res>> {
    try {
      const timeoutMs: unknown = options?.timeoutMs === undefined ? 30_000 : options.timeoutMs; // null is refused, not defaulted
      if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
        throw new InvalidArgumentError("timeoutMs", `ask('${name}'): timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`);
      }
      const message = this.outgoing(name, payload as JsonObject, options, true);
      if (options?.failIfSuspended === true && this.getAgent(name)?.status === ProcessStatus.SUSPENDED) throw new AgentSuspendedError(name);
      const transport = this.services.bus.transport;
      if (options?.failIfSuspended === true && this.getAgent(name) === undefined && transport !== undefined) {
        // An agent in another process: its owner says whether it is suspended (the query counts toward the timeout).
        return transport.control(name, "status", {}, timeoutMs, options.signal).then((answer) => {
          if (answer.status === ProcessStatus.SUSPENDED) throw new AgentSuspendedError(name);
          return this.services.bus.request(message, timeoutMs, options.signal);
        }) as Promise<Message<Res>>;
      }
      return this.services.bus.request(message, timeoutMs, options?.signal) as Promise<Message<Res>>;
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checking and composing threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Pauses the agent `name` for approval. An agent another runtime hosts (with
   * a transport) is paused by that runtime, which answers; then `timeoutMs`
   * defaults to 30 s and the call can also reject with `AGENT_UNREACHABLE` or
   * `CONTROL_TIMEOUT` (see docs/nats.md). Resolves once it is SUSPENDED (after
   * the message it is handling, if any) and the pause is announced: its
   * marker's persist attempts, `onSuspend` and `agent.suspend` receipt are
   * done. Suspending a suspended agent keeps its `since` and `suspensionId`
   * and updates the reason; with the same reason it changes nothing and
   * resolves once the pause is announced. With `expiresInMs` the pause has a
   * deadline, stored in its marker: once it passes it is denied by decider
   * `"expiry"`. Rejects with `AGENT_NOT_FOUND`, `INVALID_ARGUMENT` for a
   * reason that is not a string of at most 1,024 characters,
   * `RUNTIME_NOT_STARTED` before `start()` was called.
   * @example
   * ```ts
   * await runtime.suspend("payer", "large payment", { expiresInMs: 3_600_000 });
   * ```
   */
  suspend(name: string, reason = "", options: SuspendOptions = {}): Promise<void> {
    try {
      checkOptionsObject(`suspend('${name}')`, options);
      assertReason(`suspend('${name}')`, reason);
      const expiresInMs = checkExpiresInMs(`suspend('${name}')`, options.expiresInMs);
      return this.control(name, "_agency.suspend", expiresInMs === undefined ? { reason } : { reason, expiresInMs }, options);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Resumes the suspended agent `name` on the word of `approver`. Resolves once
   * it is RUNNING again, before it takes its next business message. Resuming a
   * running agent is a no-op (the approver is still checked). Rejects, before
   * anything is sent, with `INVALID_APPROVER` (not a string, nothing visible,
   * a control character, lone surrogate or bidi override in it, or more than
   * 1,024 characters), `AGENT_NOT_FOUND` or `RUNTIME_NOT_STARTED`; then with `STALE_APPROVAL` (a `suspensionId` that is
   * not the current pause), `IDENTITY_CHANGED`, `RESUME_REFUSED`
   * (`authorizeResume` said no) or `AUDIT_UNAVAILABLE` (a receipt could not be
   * recorded).
   */
  resume(name: string, approver: string, options: ResumeOptions = {}): Promise<void> {
    try {
      checkOptionsObject(`resume('${name}')`, options);
      assertApprover(name, approver);
      const suspensionId = options.suspensionId;
      if (suspensionId !== undefined && (typeof suspensionId !== "string" || suspensionId.length === 0)) {
        throw new InvalidArgumentError("suspensionId", `resume('${name}'): suspensionId must be a non-empty string, got ${describeValue(suspensionId)}`);
      }
      const payload: JsonObject = { approver };
      if (suspensionId !== undefined) payload.suspensionId = suspensionId;
      if (options.acceptIdentityChange === true) payload.acceptIdentityChange = true;
      return this.control(name, "_agency.resume", payload, options);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Denies the pause of the suspended agent `name` on the word of `decider`:
   * the same checks, in the same order, as {@link Runtime.resume}
   * (`authorizeResume` is asked, told `{ decision: "deny" }`), then an
   * `agent.deny` receipt before the effect, the marker cleared in one write,
   * RUNNING again, and `onDeny(decider, marker, reason)` instead of
   * `onResume`, so the agent drops its pending action. Resolves once it is
   * RUNNING again. Denying a running agent is a no-op (the decider is still
   * checked). Rejects, before anything is sent, with `INVALID_APPROVER` (for
   * the decider) or `AGENT_NOT_FOUND`; then with `STALE_APPROVAL`,
   * `RESUME_REFUSED` or `AUDIT_UNAVAILABLE`. An agent another runtime hosts (with a
   * transport) is denied by that runtime — its `authorizeResume`, its
   * `agent.deny` receipt, its `onDeny` — which answers; then `timeoutMs`
   * defaults to 30 s and the call can also reject with `AGENT_UNREACHABLE` or
   * `CONTROL_TIMEOUT` (see docs/nats.md).
   * @example
   * ```ts
   * const [pause] = runtime.listSuspended();
   * await runtime.deny("payer", "bob", { suspensionId: pause.suspensionId, reason: "over budget" });
   * ```
   */
  deny(name: string, decider: string, options: DenyOptions = {}): Promise<void> {
    try {
      checkOptionsObject(`deny('${name}')`, options);
      assertApprover(name, decider, "deny");
      const { suspensionId, reason } = options;
      if (suspensionId !== undefined && (typeof suspensionId !== "string" || suspensionId.length === 0)) {
        throw new InvalidArgumentError("suspensionId", `deny('${name}'): suspensionId must be a non-empty string, got ${describeValue(suspensionId)}`);
      }
      if (reason !== undefined) assertReason(`deny('${name}')`, reason);
      // A denial travels as a resume request with decision "deny": the same path, checks and ordering.
      const payload: JsonObject = { approver: decider, decision: "deny" };
      if (suspensionId !== undefined) payload.suspensionId = suspensionId;
      if (reason !== undefined) payload.reason = reason;
      return this.control(name, "_agency.resume", payload, options, "deny");
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what validation threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Every SUSPENDED agent of this runtime, with its reason, since, suspension
   * id and deadline (if any): synchronous, from memory.
   * @throws {@link InvalidArgumentError} for options that are not an object or a `scope` other than `"local"`/`"cluster"`
   */
  listSuspended(options?: { scope?: "local" }): SuspendedAgent[];
  /**
   * Every suspended agent in the runtime's shared store, wherever it runs —
   * this process, another one on the bus, or one that is down — from the
   * store's marker column in one query, sorted by name. It is what the store
   * records: a pause whose persist failed (`durable: false`) is only in its
   * owner's `listSuspended()`. Rejects with `CLUSTER_SCOPE_UNSUPPORTED`
   * (nothing queried) when the store is not a `PostgresStateStore` or a fenced
   * view of one (an `InMemoryStateStore` or `SqliteStateStore` knows only its
   * own process's agents), and with the store's `STORE_UNAVAILABLE` or
   * `STORE_CLOSED`. Needs no `start()`.
   * @example
   * ```ts
   * const runtime = new Runtime({ root, store: postgresStore.fenced(fence), transport });
   * for (const pause of await runtime.listSuspended({ scope: "cluster" })) {
   *   await runtime.resume(pause.name, "alice@finance", { suspensionId: pause.suspensionId });
   * }
   * ```
   */
  listSuspended(options: { scope: "cluster" }): Promise<SuspendedAgent[]>;
  /** Either of the above, as `options.scope` says. */
  listSuspended(options: ListSuspendedOptions): SuspendedAgent[] | Promise<SuspendedAgent[]>;
  listSuspended(options: ListSuspendedOptions = {}): SuspendedAgent[] | Promise<SuspendedAgent[]> {
    checkOptionsObject("listSuspended()", options);
    const scope: unknown = options.scope === undefined ? "local" : options.scope; // null is refused, not defaulted
    if (scope === "cluster") return listClusterSuspended(this.services.store);
    if (scope !== "local") {
      throw new InvalidArgumentError("scope", `listSuspended({ scope }): scope must be "local" (this runtime's agents) or "cluster" (every agent in the shared store), got ${describeValue(scope)}`);
    }
    const suspended: SuspendedAgent[] = [];
    for (const agent of this.services.registry.all()) {
      const marker = agent.suspension;
      if (agent.status === ProcessStatus.SUSPENDED && marker !== undefined) {
        suspended.push({
          name: agent.name,
          reason: marker.reason,
          since: marker.since,
          suspensionId: marker.suspensionId,
          ...(marker.expiresAt === undefined ? {} : { expiresAt: marker.expiresAt }),
        });
      }
    }
    return suspended;
  }

  /** @internal */
  childExited(child: SupervisedChild, exit: ChildExit): void {
    const error = exit.kind === "crash" && exit.error instanceof Error ? exit.error : new Error(`root '${child.name}' exited: ${exit.kind}`);
    void this.stop();
    if (exit.kind === "crash") {
      this.services.logger.error(`the root supervisor '${child.name}' gave up; the runtime stops`, { error });
      try {
        this.emit("escalated", error);
      } catch (listenerError) {
        this.services.logger.error("an 'escalated' listener threw", { error: listenerError });
      }
    }
  }

  private async shutdown(): Promise<void> {
    // A start in flight finishes first; an onStart that hangs gets its shutdownTimeoutMs, then its start fails.
    this.stopSignal.abort();
    if (this.starting !== undefined) await this.starting.catch(() => undefined);
    // Asks no one will answer must not hold the stop up until they time out.
    this.services.bus.close();
    try {
      await this.root[stopChild]();
    } finally {
      this.root[closeChild]();
      clearInterval(this.aliveHandle);
      await this.services.bus.transport?.stop();
    }
  }


  /**
   * The one check every call from outside that messages an agent (`send`,
   * `ask`, `suspend`, `resume`, and every control call to come) makes after
   * checking what it was passed and before anything is queued:
   * `RUNTIME_NOT_STARTED` when `start()` was never called (no agent runs to
   * take it, and nothing is queued for later), `RUNTIME_STOPPED` after a
   * failed start or once `stop()` was called. Calls made while `start()`
   * runs are accepted: they wait in the mailbox until the agent runs.
   */
  private assertStarted(call: string): void {
    if (this.startFailed) {
      throw new RuntimeStateError("RUNTIME_STOPPED", `${call}: the runtime failed to start and stopped its agents again; fix the cause of START_FAILED and build a new Runtime`);
    }
    if (this.stopping !== undefined) {
      throw new RuntimeStateError("RUNTIME_STOPPED", `${call}: the runtime was stopped, so nothing was sent; build a new Runtime and start() it`);
    }
    if (this.starting === undefined) {
      throw new RuntimeStateError("RUNTIME_NOT_STARTED", `${call}: the runtime is not started, so nothing was sent; call (and await) runtime.start() first`);
    }
  }

  /**
   * Sends a runtime control request on the priority lane; the returned
   * promise resolves once the agent has acted on it. The agent waits for
   * this very promise to settle before it takes its next message.
   */
  private control(name: string, type: "_agency.suspend" | "_agency.resume", payload: JsonObject, options: ControlOptions, call = type.slice(8)): Promise<void> {
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0)) {
      throw new InvalidArgumentError("timeoutMs", `${call}('${name}'): timeoutMs must be a non-negative number of milliseconds, got ${describeValue(timeoutMs)}`);
    }
    if (this.services.registry.get(name) === undefined) {
      const transport = this.services.bus.transport;
      if (transport?.hosts(name) !== true) throw notFound(name);
      this.assertStarted(`${call}('${name}')`);
      // The runtime that hosts the agent decides, receipts and answers (see docs/nats.md); a deny travels as a
      // resume with decision "deny", as it does in one process.
      return transport.control(name, type === "_agency.suspend" ? "suspend" : "resume", payload, timeoutMs ?? REMOTE_CONTROL_TIMEOUT_MS, options.signal).then(() => undefined);
    }
    this.assertStarted(`${call}('${name}')`);
    payload.sent = ++this.services.controlSent.count;
    return this.services.bus.control(composeControl(this.outside, name, type, payload), timeoutMs, options.signal);
  }

  private outgoing(name: string, payload: JsonObject, options: RuntimeSendOptions | undefined, request: boolean): Message {
    const type = options?.type === undefined ? DEFAULT_MESSAGE_TYPE : options.type;
    if (isReservedType(type)) throw new ReservedMessageTypeError(type);
    if (this.services.registry.get(name) === undefined && this.services.bus.transport?.hosts(name) !== true) throw notFound(name);
    // A send from inside the caller's own span (an HTTP request, say) continues its trace.
    this.outside.span = this.services.telemetry.tracing ? trace.getSpan(context.active()) : undefined;
    const message = composeOutgoing(this.outside, name, payload, type, options?.ttlMs, request ? OUTSIDE_SENDER : undefined);
    this.assertStarted(request ? `ask('${name}')` : `send('${name}')`); // after the checks of what was passed: bad input is reported as such
    return message;
  }
}

/**
 * Checks the whole tree before anything is attached, so a refused
 * construction leaves every agent and supervisor untouched: names valid and
 * unique across agents and supervisors, no instance listed twice, none
 * already belonging to a runtime.
 */
function checkTree(root: SupervisedChild): void {
  // One entry per name: an instance met twice finds itself under its own name.
  const named = new Map<string, SupervisedChild>();
  // A loop, not recursion: a tree built in code may nest deeper than the stack allows.
  const pending: SupervisedChild[] = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    const what = node instanceof AgentProcess ? "agent" : "supervisor";
    const first = typeof node.name === "string" ? named.get(node.name) : undefined;
    if (first === node) {
      throw new InvalidArgumentError(what, `${what} '${node.name}' appears twice in the tree; create one instance per place in the tree`);
    }
    assertValidName(node.name, what);
    if (node.attached) {
      throw new InvalidArgumentError(what, `${what} '${node.name}' already belongs to a runtime; create a new instance instead`);
    }
    if (first !== undefined) {
      const firstWhat = first instanceof AgentProcess ? "agent" : "supervisor";
      throw new DuplicateNameError(node.name, `${what} name '${node.name}' is already used in this tree by a ${firstWhat}; names of agents and supervisors must be unique`);
    }
    named.set(node.name, node);
    if (node instanceof Supervisor || node instanceof DynamicSupervisor) {
      // Pushed last to first, so children are checked in order; no spread, which would pass every child as an argument.
      const children = node.children;
      for (let i = children.length - 1; i >= 0; i--) pending.push(children[i] as SupervisedChild);
    }
  }
}

/** Refuses options given as anything but an object (`null`, a number) with `INVALID_ARGUMENT`. */
function checkOptionsObject(call: string, options: unknown): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError("options", `${call}: options must be an object (or left out), got ${describeValue(options)}`);
  }
}

function rootOf(root: RuntimeOptions["root"]): SupervisedChild {
  if (Array.isArray(root)) return new Supervisor("root", { children: root as SupervisedChild[] });
  if (root instanceof AgentProcess) return new Supervisor("root", { children: [root] });
  if (typeof root !== "object" || root === null || typeof (root as SupervisedChild)[startChild] !== "function") {
    throw new InvalidArgumentError("root", `new Runtime({ root }) needs a Supervisor, DynamicSupervisor, AgentProcess or an array of them, got ${describeValue(root)}`);
  }
  return root as SupervisedChild;
}
