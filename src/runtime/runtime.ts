import { context, trace } from "@opentelemetry/api";
import { EventEmitter } from "eventemitter3";
import { notFound } from "../bus/message-bus.js";
import type { TransportHost } from "../bus/transport.js";
import { describeValue } from "../errors/civitas-error.js";
import { AgentSuspendedError, InvalidArgumentError, ReservedMessageTypeError, RuntimeStateError } from "../errors/errors.js";
import type { JsonObject, JsonPayload } from "../message/json.js";
import type { Message } from "../message/message.js";
import { DEFAULT_MESSAGE_TYPE, isReservedType } from "../message/system-types.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { Pause } from "../process/pause.js";
import { composeOutgoing, type EnvelopeContext } from "../process/envelope.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { attachChild, closeChild, stopChild, type ChildExit, type ChildParent, type SupervisedChild } from "../contracts/child.js";
import { DynamicSupervisor } from "../supervision/dynamic-supervisor.js";
import { Supervisor } from "../supervision/supervisor.js";
import { checkRuntimeOptions } from "./check-runtime-options.js";
import { createServices } from "./create-services.js";
import { denyAgent, listSuspendedAgents, resumeAgent, suspendAgent, type ControlPath, type DenyOptions, type ListSuspendedOptions, type ResumeOptions, type SuspendOptions } from "./runtime-control.js";
import type { SuspendedAgent } from "./suspended-agent.js";
import type { RuntimeEvents } from "../contracts/runtime-events.js";
import type { FromTopologyOptions, RuntimeAskOptions, RuntimeOptions, RuntimeSendOptions } from "./runtime-options.js";
import { checkTree, rootOf, startTree } from "./runtime-tree.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { topologyRuntimeOptions } from "./topology.js";
import { attachTransport } from "./transport-host.js";
import { RuntimeApprovals } from "./runtime-approvals.js";

const OUTSIDE_SENDER = "_runtime";

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
  private readonly services: RuntimeServices<AgentProcess>;
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
  /** What `suspend`, `resume` and `deny` send their requests through. */
  private readonly controlPath: ControlPath;
  /** The approval requests of held actions: list, get, approve, deny (docs/approvals.md). */
  readonly approvals: RuntimeApprovals;

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
    checkRuntimeOptions(options);
    this.root = rootOf(options.root);
    const tree = checkTree(this.root);
    this.keepAlive = options.keepAlive ?? true;
    this.services = createServices(options, this, this.stopSignal.signal);
    this.services.registry.adopt(tree.agents, tree.supervisors);
    this.outside = { sender: OUTSIDE_SENDER, clock: this.services.clock, current: undefined, span: undefined };
    this.controlPath = { services: this.services, outside: this.outside, takesCalls: () => this.takesCalls(), assertStarted: (call) => this.assertStarted(call) };
    this.approvals = new RuntimeApprovals(this.controlPath);
    this.transportHost = options.transport === undefined ? undefined : attachTransport(options.transport, this.services, this);
    this.root[attachChild](this, this.services);
    this.services.registry.adopted();
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
    return new Runtime(topologyRuntimeOptions(topology, options));
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
      this.starting = startTree(this.root, this.services, this.transportHost).then(() => this.services.telemetry.flush(), (error: unknown) => {
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
   * queued) before `start()` was called, `RUNTIME_STOPPED` after `stop()`; with `AGENT_SUSPENDED`
   * when `failIfSuspended` is set and the agent is SUSPENDED. While the ask waits, its timeout
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
   * `"expiry"`. Resolves with the pause: its `suspensionId` (to pass to
   * `resume`/`deny`, so the decision applies to this pause only) and its
   * `expiresAt` when it has a deadline; a suspended agent's current pause
   * when it was suspended already. Rejects with `AGENT_NOT_FOUND`, `INVALID_ARGUMENT` for a
   * reason that is not a string of at most 1,024 characters,
   * `RUNTIME_NOT_STARTED` before `start()` was called.
   * @example
   * ```ts
   * const { suspensionId, expiresAt } = await runtime.suspend("payer", "large payment", { expiresInMs: 3_600_000 });
   * await runtime.resume("payer", "alice", { suspensionId });
   * ```
   */
  suspend(name: string, reason = "", options: SuspendOptions = {}): Promise<Pause> {
    return suspendAgent(this.controlPath, name, reason, options);
  }

  /**
   * Resumes the suspended agent `name` on the word of `approver`. Resolves once
   * it is RUNNING again, before it takes its next business message. Resuming a
   * running agent is a no-op (the approver is still checked). Rejects, before
   * anything is sent, with `INVALID_APPROVER` (not a string, nothing visible,
   * a control character, lone surrogate or bidi override in it, or more than
   * 1,024 characters), `AGENT_NOT_FOUND` or `RUNTIME_NOT_STARTED`; then with
   * `STALE_APPROVAL` (a `suspensionId` that is not the current pause),
   * `IDENTITY_CHANGED`, `RESUME_REFUSED` (`authorizeResume` said no) or
   * `AUDIT_UNAVAILABLE` (a receipt could not be recorded). An agent another
   * runtime hosts (with a transport) is resumed by that runtime, which
   * answers; then `timeoutMs` defaults to 30 s and the call can also reject
   * with `AGENT_UNREACHABLE` or `CONTROL_TIMEOUT` (see docs/nats.md).
   */
  resume(name: string, approver: string, options: ResumeOptions = {}): Promise<void> {
    return resumeAgent(this.controlPath, name, approver, options);
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
    return denyAgent(this.controlPath, name, decider, options);
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
    return listSuspendedAgents(this.services.registry, this.services.store, options);
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
   * `ask`, `suspend`, `resume`, `deny`) makes after checking what it was
   * passed and before anything is queued:
   * `RUNTIME_NOT_STARTED` when `start()` was never called (no agent runs to
   * take it, and nothing is queued for later), `RUNTIME_STOPPED` after a
   * failed start or once `stop()` was called. Calls made while `start()`
   * runs are accepted: they wait in the mailbox until the agent runs.
   */
  private takesCalls(): boolean {
    return !this.startFailed && this.stopping === undefined && this.starting !== undefined;
  }

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

  private outgoing(name: string, payload: JsonObject, options: RuntimeSendOptions | undefined, request: boolean): Message {
    const type = options?.type === undefined ? DEFAULT_MESSAGE_TYPE : options.type;
    if (isReservedType(type)) throw new ReservedMessageTypeError(type);
    if (this.services.registry.find(name) === undefined && this.services.bus.transport?.hosts(name) !== true) throw notFound(name);
    // A send from inside the caller's own span (an HTTP request, say) continues its trace.
    this.outside.span = this.services.telemetry.tracing ? trace.getSpan(context.active()) : undefined;
    const message = composeOutgoing(this.outside, name, payload, type, options?.ttlMs, request ? OUTSIDE_SENDER : undefined);
    // After the checks of what was passed: bad input is reported as such. The call's name is built only to report it.
    if (this.startFailed || this.stopping !== undefined || this.starting === undefined) this.assertStarted(request ? `ask('${name}')` : `send('${name}')`);
    return message;
  }
}
