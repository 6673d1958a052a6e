import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import {
  AgentNotFoundError,
  IllegalTransitionError,
  InvalidArgumentError,
  NoDynamicSupervisorError,
  ReservedMessageTypeError,
  RuntimeStateError,
  StartFailedError,
} from "../errors/errors.js";
import { assertValidName } from "../bus/registry.js";
import { uuidv7 } from "../message/ids.js";
import { assertJsonObject, type JsonObject } from "../message/json.js";
import { nextAttempt, type Message } from "../message/message.js";
import { isReservedType } from "../message/system-types.js";
import { Mailbox, type MailboxConsumer } from "../mailbox/mailbox.js";
import type { RuntimeServices } from "../runtime/services.js";
import type { ChildExit, ChildParent, StopOptions, SupervisedChild } from "../supervision/child.js";
import { isDynamicHost, type AgentFactory, type ChildTerminationReason } from "../supervision/dynamic-host.js";
import { settlesWithin } from "../time/deadline.js";
import { durationMs, nonNegativeInteger, resolveAgentOptions, type AgentProcessOptions, type ResolvedAgentOptions } from "./agent-options.js";
import { composeOutgoing, composeReply, isMessage, type EnvelopeContext } from "./envelope.js";
import { ErrorAction } from "./error-action.js";
import { isLegalTransition, ProcessStatus } from "./process-status.js";

/** Options of `send`, `sendCapable` and `broadcast`. */
export interface SendOptions {
  /** The message type. @defaultValue "message" */
  type?: string;
  /** Discard the message if it waits in the mailbox longer than this. */
  ttlMs?: number;
  /** Aborts a send that is waiting for room in a full mailbox. */
  signal?: AbortSignal;
}

/** Options of `ask`. */
export interface AskOptions extends SendOptions {
  /** How long to wait for the reply. @defaultValue 30000 */
  timeoutMs?: number;
}


/**
 * An agent: a named process with a mailbox, lifecycle hooks and a
 * checkpointed `state`. Subclass it and override the hooks you need; the
 * runtime calls them one message at a time, never concurrently.
 *
 * @example
 * ```ts
 * class Counter extends AgentProcess<{ count: number }> {
 *   override state = { count: 0 };
 *   override async handle(message: Message) {
 *     this.state.count += 1;
 *     await this.checkpoint();
 *     return this.reply({ count: this.state.count });
 *   }
 * }
 * ```
 */
export class AgentProcess<S extends JsonObject = JsonObject> implements SupervisedChild, MailboxConsumer {
  /** The agent's unique name within its runtime. */
  readonly name: string;
  /** A UUIDv7 that identifies this instance. */
  readonly id: string;
  /** Capability tags, kept across restarts. */
  readonly capabilities: readonly string[];
  /** The agent's state: a plain JSON object, persisted by {@link AgentProcess.checkpoint} and restored on every start. */
  state: S;

  private readonly options: ResolvedAgentOptions;
  private currentStatus = ProcessStatus.INITIALIZING;
  private services: RuntimeServices | undefined;
  private parent: ChildParent | undefined;
  private box: Mailbox | undefined;
  private initialState: string | undefined;
  private generation = 0;
  private starts = 0;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private finishing: Promise<void> | undefined;
  private loopDone: Promise<void> | undefined;
  private driving = false;
  private exit: ChildExit | undefined;
  private stopRequested = false;
  private drainAll = false;
  private current: Message | undefined;
  private currentSpan: Span | undefined;

  /**
   * @param name - unique within the runtime: non-empty, no whitespace or glob characters
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad name or option
   */
  constructor(name: string, options: AgentProcessOptions = {}) {
    assertValidName(name, "agent");
    this.name = name;
    this.id = uuidv7();
    this.options = resolveAgentOptions(options);
    this.capabilities = this.options.capabilities;
    this.state = {} as S;
  }

  /** The lifecycle status. */
  get status(): ProcessStatus {
    return this.currentStatus;
  }

  /** How many times this agent has been started (1 after the first start, 2 after a restart …). */
  get incarnation(): number {
    return this.starts;
  }

  /** The agent's mailbox; it exists once the agent belongs to a runtime. */
  get mailbox(): Mailbox {
    if (this.box === undefined) throw notAttached(this.name);
    return this.box;
  }

  // ---- hooks -------------------------------------------------------------

  /** Runs on every (re)start after `state` is restored, before the first message. */
  async onStart(): Promise<void> {}

  /**
   * Handles one business message. Return `this.reply(...)` to answer an `ask`
   * (or any message to have it routed).
   */
  async handle(_message: Message): Promise<Message | void> {}

  /** Decides what a failed message leads to. @defaultValue `ErrorAction.ESCALATE` */
  async onError(_error: unknown, _message: Message): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }

  /** Runs when the agent stops, also after a crash. */
  async onStop(): Promise<void> {}

  /** Runs when the agent enters SUSPENDED. */
  async onSuspend(_reason: string): Promise<void> {}

  /** Runs when the agent is resumed by `approver`. */
  async onResume(_approver: string): Promise<void> {}

  /** Handles a `civitas.eval.correction` message (instead of `handle`). */
  async onCorrection(_message: Message): Promise<void> {}

  /** Told when an agent this one spawned under a `DynamicSupervisor` is gone for good. */
  async onChildTerminated(_name: string, _reason: ChildTerminationReason): Promise<void> {}

  // ---- messaging ---------------------------------------------------------

  /**
   * Sends `payload` to the agent named `recipient`, waiting while its mailbox is full.
   * Rejects with `AGENT_NOT_FOUND`, `RESERVED_MESSAGE_TYPE`, `PAYLOAD_NOT_SERIALIZABLE` or `MAILBOX_CLOSED`.
   */
  async send(recipient: string, payload: JsonObject, options?: SendOptions): Promise<void> {
    const message = composeOutgoing(this.envelope(), { recipient, payload, type: options?.type, ttlMs: options?.ttlMs });
    await this.requireServices().bus.deliver(message, options?.signal);
  }

  /**
   * Sends a request and resolves with the reply message.
   * Rejects with `ASK_TIMEOUT` after `timeoutMs` (30 s by default). Asking an
   * agent that is itself waiting on an ask to this one deadlocks until the timeout.
   */
  async ask(recipient: string, payload: JsonObject, options?: AskOptions): Promise<Message> {
    const timeoutMs = durationMs("timeoutMs", options?.timeoutMs ?? 30_000);
    const request = composeOutgoing(this.envelope(), { recipient, payload, type: options?.type, ttlMs: options?.ttlMs, correlationId: uuidv7(), replyTo: this.name });
    return this.requireServices().bus.request(request, { timeoutMs, signal: options?.signal });
  }

  /**
   * Sends to one agent that declares `capability` (round-robin among them).
   * Rejects with `AGENT_NOT_FOUND` when none does.
   */
  async sendCapable(capability: string, payload: JsonObject, options?: SendOptions): Promise<void> {
    const target = this.requireServices().registry.withCapability(capability);
    if (target === undefined) {
      throw new AgentNotFoundError(capability, `no agent declares capability '${capability}'; add it to an agent's options.capabilities`);
    }
    await this.send(target.name, payload, options);
  }

  /**
   * Sends `payload` to every other agent whose name matches the glob `pattern`
   * (`*`, `?`, `[abc]`). Resolves with how many agents it was sent to.
   */
  async broadcast(pattern: string, payload: JsonObject, options?: SendOptions): Promise<number> {
    const targets = this.requireServices().registry.match(pattern).filter((agent) => agent !== this as AgentProcess);
    await Promise.all(targets.map((agent) => this.send(agent.name, payload, options)));
    return targets.length;
  }

  /**
   * Builds the reply to the message being handled; return it from `handle`.
   * @throws {@link InvalidArgumentError} outside `handle`
   */
  reply(payload: JsonObject): Message {
    const request = this.current;
    if (request === undefined) {
      throw new InvalidArgumentError("reply", `'${this.name}' called reply() outside handle(); reply only to the message being handled`);
    }
    return composeReply(this.envelope(), request, payload);
  }

  /** Persists `state` to the runtime's store in one atomic write. */
  async checkpoint(): Promise<void> {
    await this.persist();
  }

  // ---- dynamic children --------------------------------------------------

  /**
   * Starts a new agent under this agent's `DynamicSupervisor`; this agent is
   * told through `onChildTerminated` when it is gone for good.
   * Rejects with `NO_DYNAMIC_SUPERVISOR` when this agent is not under one.
   */
  async spawn<A extends AgentProcess>(factory: AgentFactory<A>, name: string, options?: JsonObject & AgentProcessOptions): Promise<A> {
    return this.dynamicHost().spawn(factory, name, options, this.name);
  }

  /** Stops and removes a child of this agent's `DynamicSupervisor`. */
  async despawn(name: string): Promise<void> {
    await this.dynamicHost().despawn(name);
  }

  /** Gracefully stops and removes a child of this agent's `DynamicSupervisor`, draining as asked. */
  async stop(name: string, options?: StopOptions): Promise<void> {
    await this.dynamicHost().stop(name, options);
  }

  // ---- supervision (internal) --------------------------------------------

  /** @internal */
  attach(parent: ChildParent, services: RuntimeServices): void {
    if (this.services !== undefined) {
      throw new InvalidArgumentError("agent", `agent '${this.name}' already belongs to a runtime; create a new instance instead`);
    }
    services.registry.register(this);
    this.parent = parent;
    this.services = services;
    this.box = this.newMailbox();
  }

  private newMailbox(): Mailbox {
    return new Mailbox({
      capacity: this.options.mailboxSize,
      priorityCapacity: this.options.priorityMailboxSize,
      clock: this.requireServices().clock,
      onExpired: this.requireServices().expired,
    });
  }

  /** @internal */
  detach(): void {
    this.services?.registry.release(this.name);
  }

  /** @internal */
  close(): void {
    this.box?.close();
  }

  /** @internal */
  startChild(): Promise<void> {
    if (this.starting !== undefined) return this.starting;
    const status = this.currentStatus;
    if (status === ProcessStatus.RUNNING || status === ProcessStatus.SUSPENDED || status === ProcessStatus.STOPPING) {
      return Promise.reject(new IllegalTransitionError(this.name, status, ProcessStatus.INITIALIZING));
    }
    this.starting = this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** @internal */
  async stopChild(options: StopOptions = {}): Promise<void> {
    for (;;) {
      switch (this.currentStatus) {
        case ProcessStatus.INITIALIZING:
          if (this.starting === undefined) return;
          await this.starting.catch(() => undefined);
          continue;
        case ProcessStatus.RUNNING:
        case ProcessStatus.SUSPENDED:
          this.stopping = this.requestStop(options);
          return this.stopping;
        default:
          await this.stopping;
          await this.loopDone;
          await this.finishing;
          return;
      }
    }
  }

  // ---- lifecycle ---------------------------------------------------------

  private async start(): Promise<void> {
    const services = this.requireServices();
    if (this.currentStatus !== ProcessStatus.INITIALIZING) this.transition(ProcessStatus.INITIALIZING);
    if (this.box?.closed === true) this.box = this.newMailbox(); // restarted after it stopped for good
    this.generation++;
    this.starts++;
    this.stopRequested = false;
    this.drainAll = false;
    this.driving = false;
    this.exit = undefined;
    this.stopping = undefined;
    this.finishing = undefined;
    const span = services.telemetry.startSpan("civitas.agent.start", { "civitas.agent.name": this.name, "civitas.agent.incarnation": this.starts });
    try {
      if (this.initialState === undefined) {
        assertJsonObject(this.state, `initial state of '${this.name}'`);
        this.initialState = JSON.stringify(this.state);
      }
      const stored = await services.store.get(this.name);
      this.state = (stored ?? JSON.parse(this.initialState)) as S;
      await this.onStart();
    } catch (error) {
      this.transition(ProcessStatus.CRASHED);
      services.telemetry.endSpan(span, error);
      void services.telemetry.audit("agent.crash", this.name, { phase: "start", error: errorText(error) });
      this.finishing = this.runHook("onStop", () => this.onStop(), this.options.shutdownTimeoutMs);
      await this.finishing;
      throw new StartFailedError(this.name, { cause: error });
    }
    this.transition(ProcessStatus.RUNNING);
    services.telemetry.endSpan(span);
    void services.telemetry.audit("agent.start", this.name, { incarnation: this.starts });
    this.drive();
  }

  private async requestStop(options: StopOptions): Promise<void> {
    const services = this.requireServices();
    const timeoutMs = nonNegativeInteger("timeoutMs", options.timeoutMs ?? this.options.shutdownTimeoutMs);
    this.stopRequested = true;
    this.drainAll = options.drain === "all";
    this.exit = { kind: "normal", reason: "stopped" };
    this.transition(ProcessStatus.STOPPING);
    this.mailbox.unpark();
    if (!this.driving) this.drive();
    if (!(await settlesWithin(this.loopDone ?? Promise.resolve(), services.clock, timeoutMs))) {
      services.logger.warn(`'${this.name}' did not finish its message within ${timeoutMs} ms; stopping it anyway (its handle() keeps running, and its result will be dropped)`);
      this.generation++;
      this.loopDone = undefined;
    }
    this.finishing = this.finish();
    await this.finishing;
  }

  /** Ends the incarnation: `onStop`, final status, audit. Runs once per incarnation. */
  private async finish(): Promise<void> {
    const services = this.requireServices();
    const span = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": this.name });
    await this.runHook("onStop", () => this.onStop(), this.options.shutdownTimeoutMs);
    if (this.currentStatus === ProcessStatus.STOPPING) this.transition(ProcessStatus.STOPPED);
    const exit = this.exit;
    services.telemetry.endSpan(span);
    if (exit?.kind !== "crash") {
      void services.telemetry.audit("agent.stop", this.name, { reason: exit?.reason ?? "stopped" });
    }
  }

  /** @internal Called by the mailbox when a message lands while the loop is parked. */
  mailboxReady(): void {
    if (!this.driving) this.drive();
  }

  /** Starts the message loop of the current incarnation. Never two at once: `driving` guards it. */
  private drive(): void {
    this.driving = true;
    this.loopDone = this.run(this.generation);
  }

  private async run(generation: number): Promise<void> {
    await undefined; // a handler never runs inside the call stack of whoever woke the loop
    let exited: boolean;
    try {
      exited = await this.loop(generation);
    } catch (error) {
      // Only a bug in the runtime lands here; never leave the agent half-running.
      if (generation === this.generation) {
        this.driving = false;
        if (this.currentStatus === ProcessStatus.RUNNING || this.currentStatus === ProcessStatus.SUSPENDED) this.crash(error);
      }
      exited = true;
    }
    if (!exited || generation !== this.generation || this.stopRequested) return;
    // Stopped on its own (STOP, halt) it takes no more messages: senders get MAILBOX_CLOSED, not silence.
    if (this.exit?.kind === "normal") this.mailbox.close();
    this.finishing = this.finish();
    await this.finishing;
    this.parent?.childExited(this, this.exit ?? { kind: "normal", reason: "stopped" }, this.starts);
  }

  /**
   * Dispatches messages until the mailbox is empty — then it parks (the
   * mailbox nudges it when work arrives) and returns `false` — or the
   * incarnation ends (`true`). An idle agent holds no pending promise.
   */
  private async loop(generation: number): Promise<boolean> {
    const mailbox = this.mailbox;
    const scheduler = this.requireServices().scheduler;
    for (;;) {
      const pause = scheduler.tick();
      if (pause !== undefined) await pause;
      if (generation !== this.generation) return true;
      let message: Message | undefined;
      switch (this.currentStatus) {
        case ProcessStatus.RUNNING:
          message = mailbox.poll();
          if (message === undefined) {
            this.driving = false;
            mailbox.park(this, false);
            return false;
          }
          break;
        case ProcessStatus.STOPPING:
          message = this.drainAll ? mailbox.poll() : undefined;
          if (message === undefined) {
            this.driving = false;
            return true;
          }
          break;
        default:
          this.driving = false;
          return true;
      }
      await this.dispatch(message, generation);
    }
  }

  private async dispatch(message: Message, generation: number): Promise<void> {
    switch (message.type) {
      case "_agency.shutdown":
        this.beginSelfStop("shutdown");
        return;
      case "civitas.eval.halt":
        this.beginSelfStop("halt");
        return;
      case "_agency.heartbeat":
        if (message.replyTo !== undefined) await this.deliverQuietly(composeReply(this.envelope(), message, {}, "_agency.heartbeat_ack"), true);
        return;
      case "_agency.deregister":
        await this.notifyChildTerminated(message);
        return;
      default:
        if (isReservedType(message.type)) return;
        return this.invoke(message, generation);
    }
  }

  private async invoke(message: Message, generation: number): Promise<void> {
    const services = this.requireServices();
    const telemetry = services.telemetry;
    const span = telemetry.tracing
      ? telemetry.startSpan(
          "civitas.agent.handle",
          { "civitas.agent.name": this.name, "civitas.message.type": message.type, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt },
          { traceId: message.traceId, spanId: message.spanId },
        )
      : undefined;
    this.current = message;
    this.currentSpan = span;
    let result: unknown;
    let failure: { error: unknown } | undefined;
    try {
      result = message.type === "civitas.eval.correction" ? await this.onCorrection(message) : await this.handle(message);
    } catch (error) {
      failure = { error };
    }
    telemetry.endSpan(span, failure?.error);
    if (generation !== this.generation) {
      // A stop gave up waiting for this handler: whatever it produced is dropped, it can no longer act.
      services.logger.warn(`'${this.name}' finished message ${message.id} after its stop timed out; its result is dropped`, failure);
      return;
    }
    this.current = undefined;
    this.currentSpan = undefined;
    if (failure !== undefined) await this.onFailure(failure.error, message);
    else if (result !== undefined && result !== null) await this.deliverQuietly(result);
  }

  private async onFailure(error: unknown, message: Message): Promise<void> {
    const services = this.requireServices();
    if (this.currentStatus !== ProcessStatus.RUNNING) {
      services.logger.error(`'${this.name}' failed a message while ${this.currentStatus}`, { error, message: message.id });
      return;
    }
    let action: ErrorAction;
    try {
      action = await this.onError(error, message);
    } catch (hookError) {
      services.logger.error(`'${this.name}'.onError threw; escalating`, { error: hookError });
      action = ErrorAction.ESCALATE;
    }
    if (action === ErrorAction.RETRY && message.attempt < this.options.maxRetries) {
      const span = services.telemetry.startSpan("civitas.agent.retry", { "civitas.agent.name": this.name, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt + 1 });
      this.mailbox.force(nextAttempt(message));
      services.telemetry.endSpan(span);
      return;
    }
    if (action === ErrorAction.SKIP) return;
    if (action === ErrorAction.STOP) {
      this.beginSelfStop("stop");
      return;
    }
    if (action === ErrorAction.RETRY) {
      services.logger.error(`'${this.name}' gave up on message ${message.id} after ${this.options.maxRetries} retries`, { error });
    } else if (action !== ErrorAction.ESCALATE) {
      services.logger.error(`'${this.name}'.onError returned ${describeValue(action)}, not an ErrorAction; escalating`);
    }
    this.crash(error);
  }

  private crash(error: unknown): void {
    const services = this.requireServices();
    this.transition(ProcessStatus.CRASHED);
    this.exit = { kind: "crash", error };
    services.logger.error(`'${this.name}' crashed`, { error });
    void services.telemetry.audit("agent.crash", this.name, { error: errorText(error) });
  }

  private beginSelfStop(reason: string): void {
    if (this.currentStatus !== ProcessStatus.RUNNING && this.currentStatus !== ProcessStatus.SUSPENDED) return;
    this.transition(ProcessStatus.STOPPING);
    this.exit = { kind: "normal", reason };
  }

  private async notifyChildTerminated(message: Message): Promise<void> {
    const { name, reason } = message.payload;
    await this.runHook("onChildTerminated", () => this.onChildTerminated(name as string, reason as ChildTerminationReason), this.options.shutdownTimeoutMs);
  }

  // ---- helpers -----------------------------------------------------------

  /** The single path every persist takes. */
  private async persist(): Promise<void> {
    await this.requireServices().store.set(this.name, this.state);
  }

  private transition(to: ProcessStatus): void {
    const from = this.currentStatus;
    if (!isLegalTransition(from, to)) throw new IllegalTransitionError(this.name, from, to);
    this.currentStatus = to;
    this.services?.events.emit("agent.status", this.name, from, to);
  }

  private envelope(): EnvelopeContext {
    return { sender: this.name, nowMs: this.requireServices().clock.now(), current: this.current, span: this.currentSpan };
  }

  /** Delivers a message the agent produced as a result; a failure is logged, not a crash. */
  private async deliverQuietly(message: unknown, fromRuntime = false): Promise<void> {
    const services = this.requireServices();
    if (!isMessage(message)) {
      services.logger.warn(`'${this.name}'.handle returned ${describeValue(message)}; return this.reply(...) or nothing`);
      return;
    }
    if (!fromRuntime && isReservedType(message.type)) {
      // Application code must never forge runtime control, whatever path it takes.
      services.logger.error(`'${this.name}'.handle returned a '${message.type}' message; reserved types are dropped`, { error: new ReservedMessageTypeError(message.type) });
      return;
    }
    try {
      await services.bus.deliver(message);
    } catch (error) {
      services.logger.warn(`'${this.name}' could not deliver its result to '${message.recipient}'`, { error });
    }
  }

  /** Runs a hook with a deadline; its failure or hang is logged, never thrown. */
  private async runHook(hook: string, fn: () => Promise<unknown>, timeoutMs: number): Promise<void> {
    const services = this.requireServices();
    const run = (async () => fn())().catch((error: unknown) => {
      services.logger.error(`'${this.name}'.${hook} threw`, { error });
    });
    if (!(await settlesWithin(run, services.clock, timeoutMs))) {
      services.logger.warn(`'${this.name}'.${hook} did not finish within ${timeoutMs} ms; moving on`);
    }
  }

  private requireServices(): RuntimeServices {
    if (this.services === undefined) throw notAttached(this.name);
    return this.services;
  }

  private dynamicHost() {
    const parent = this.parent;
    if (parent === undefined || !isDynamicHost(parent)) {
      throw new NoDynamicSupervisorError(
        this.name,
        `'${this.name}' is not supervised by a DynamicSupervisor, so it cannot spawn, despawn or stop agents; put it under one, or call the DynamicSupervisor directly`,
      );
    }
    return parent;
  }
}

function notAttached(name: string): RuntimeStateError {
  return new RuntimeStateError("RUNTIME_NOT_STARTED", `agent '${name}' does not belong to a runtime yet; pass it (or its supervisor) to new Runtime({ root })`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
