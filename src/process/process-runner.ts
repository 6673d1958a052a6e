import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import {
  IllegalTransitionError,
  InvalidArgumentError,
  MailboxClosedError,
  NoDynamicSupervisorError,
  ReservedMessageTypeError,
  ResumeRefusedError,
  RuntimeStateError,
  StaleApprovalError,
  StartFailedError,
} from "../errors/errors.js";
import { uuidv7 } from "../message/ids.js";
import { isoTime } from "../time/clock.js";
import { assertJsonObject, isJsonObject, type JsonObject } from "../message/json.js";
import { nextAttempt, type Message } from "../message/message.js";
import { isReservedType } from "../message/system-types.js";
import { Mailbox, type MailboxConsumer } from "../mailbox/mailbox.js";
import type { RuntimeServices } from "../runtime/services.js";
import type { ChildExit, ChildParent, StopOptions } from "../supervision/child.js";
import { isDynamicHost, type ChildTerminationReason } from "../supervision/dynamic-host.js";
import { settlesWithin } from "../time/deadline.js";
import { nonNegativeInteger, type ResolvedAgentOptions } from "./agent-options.js";
import { composeReply, isMessage, type EnvelopeContext } from "./envelope.js";
import { ErrorAction } from "./error-action.js";
import { assertApprover, persistableState, readMarker, SUSPENSION_KEY, type SuspensionMarker } from "./suspension.js";
import { isLegalTransition, ProcessStatus } from "./process-status.js";
import type { AgentProcess, SendOptions } from "./agent-process.js";

/** A suspend asked for and not yet applied, with the runtime requests waiting on it. */
interface SuspendRequest {
  reason: string;
  readonly waiting: Message[];
  /**
   * The marker the pause will have, minted when it is asked for while RUNNING:
   * a checkpoint taken before the loop boundary already carries it, so
   * "store the pending action, suspend(), checkpoint()" is one atomic write.
   */
  marker: SuspensionMarker | undefined;
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
/**
 * The machinery behind one {@link AgentProcess}: its lifecycle, message loop,
 * mailbox, suspension and links to the runtime. Kept apart so that an agent
 * subclass's own fields and methods can never collide with the runtime's.
 * @internal
 */
export class ProcessRunner implements MailboxConsumer {
  currentStatus = ProcessStatus.INITIALIZING;
  services: RuntimeServices | undefined;
  parent: ChildParent | undefined;
  box: Mailbox | undefined;
  initialState: string | undefined;
  generation = 0;
  starts = 0;
  starting: Promise<void> | undefined;
  stopping: Promise<void> | undefined;
  finishing: Promise<void> | undefined;
  loopDone: Promise<void> | undefined;
  driving = false;
  exit: ChildExit | undefined;
  stopRequested = false;
  drainAll = false;
  current: Message | undefined;
  currentSpan: Span | undefined;
  marker: SuspensionMarker | undefined;
  suspendRequest: SuspendRequest | undefined;


  constructor(
    readonly agent: AgentProcess,
    readonly options: ResolvedAgentOptions,
  ) {}

  /** The agent's mailbox; it exists once the agent belongs to a runtime. */
  get mailbox(): Mailbox {
    if (this.box === undefined) throw notAttached(this.agent.name);
    return this.box;
  }

  /** @internal */
  attach(parent: ChildParent, services: RuntimeServices): void {
    if (this.services !== undefined) {
      throw new InvalidArgumentError("agent", `agent '${this.agent.name}' already belongs to a runtime; create a new instance instead`);
    }
    services.registry.register(this.agent);
    this.parent = parent;
    this.services = services;
    this.box = this.newMailbox();
  }

  newMailbox(): Mailbox {
    return new Mailbox({
      capacity: this.options.mailboxSize,
      priorityCapacity: this.options.priorityMailboxSize,
      clock: this.requireServices().clock,
      onExpired: this.requireServices().expired,
    });
  }

  /** @internal */
  detach(): void {
    this.services?.registry.release(this.agent.name);
  }

  /** @internal */
  close(): void {
    const box = this.box;
    if (box === undefined || box.closed) return;
    box.close();
    // Nobody will answer control requests still waiting here: fail them rather than leave callers hanging.
    const pending = [...(this.suspendRequest?.waiting ?? [])];
    for (let m = box.pollPriority(); m !== undefined; m = box.pollPriority()) {
      if (m.type === "_agency.suspend" || m.type === "_agency.resume") pending.push(m);
    }
    this.suspendRequest = undefined;
    for (const request of pending) {
      this.answer(request, new MailboxClosedError(`'${this.agent.name}' stopped for good before it handled ${request.type}`));
    }
  }

  /**
   * Forgets the suspension for good (permanent removal), so a future agent
   * of the same name does not come back paused.
   * @internal
   */
  async clearSuspension(): Promise<void> {
    this.setMarker(undefined);
    // The store may hold a marker memory no longer does (a resume whose persist failed): clear it there.
    const store = this.requireServices().store;
    const stored = await store.get(this.agent.name);
    if (stored !== undefined && SUSPENSION_KEY in stored) await store.set(this.agent.name, persistableState(stored, undefined));
  }

  /** @internal */
  startChild(): Promise<void> {
    if (this.starting !== undefined) return this.starting;
    const status = this.currentStatus;
    if (status === ProcessStatus.RUNNING || status === ProcessStatus.SUSPENDED || status === ProcessStatus.STOPPING) {
      return Promise.reject(new IllegalTransitionError(this.agent.name, status, ProcessStatus.INITIALIZING));
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

  async start(): Promise<void> {
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
    const span = services.telemetry.startSpan("civitas.agent.start", { "civitas.agent.name": this.agent.name, "civitas.agent.incarnation": this.starts });
    try {
      if (this.initialState === undefined) {
        assertJsonObject(this.agent.state, `initial state of '${this.agent.name}'`);
        this.initialState = JSON.stringify(this.agent.state);
      }
      const stored = await services.store.get(this.agent.name);
      // The same instance restarting knows its pause at least as well as the store does.
      this.marker ??= stored === undefined ? undefined : readMarker(this.agent.name, stored);
      this.agent.state = (stored ?? JSON.parse(this.initialState)) as JsonObject;
      this.setMarker(this.marker);
      await this.agent.onStart();
    } catch (error) {
      this.transition(ProcessStatus.CRASHED);
      services.telemetry.endSpan(span, error);
      void services.telemetry.audit("agent.crash", this.agent.name, { phase: "start", error: errorText(error) });
      this.finishing = this.runHook("onStop", () => this.agent.onStop(), this.options.shutdownTimeoutMs);
      await this.finishing;
      throw new StartFailedError(this.agent.name, { cause: error });
    }
    this.transition(this.marker === undefined ? ProcessStatus.RUNNING : ProcessStatus.SUSPENDED);
    services.telemetry.endSpan(span);
    void services.telemetry.audit("agent.start", this.agent.name, {
      incarnation: this.starts,
      ...(this.marker === undefined ? {} : { suspensionId: this.marker.suspensionId }),
    });
    this.drive();
  }

  async requestStop(options: StopOptions): Promise<void> {
    const services = this.requireServices();
    const timeoutMs = nonNegativeInteger("timeoutMs", options.timeoutMs ?? this.options.shutdownTimeoutMs);
    this.stopRequested = true;
    // A suspended agent is never drained: its queued business is unapproved work.
    this.drainAll = options.drain === "all" && this.currentStatus !== ProcessStatus.SUSPENDED;
    this.exit = { kind: "normal", reason: "stopped" };
    this.transition(ProcessStatus.STOPPING);
    this.mailbox.unpark();
    if (!this.driving) this.drive();
    if (!(await settlesWithin(this.loopDone ?? Promise.resolve(), services.clock, timeoutMs))) {
      services.logger.warn(`'${this.agent.name}' did not finish its message within ${timeoutMs} ms; stopping it anyway (its handle() keeps running, and its result will be dropped)`);
      this.generation++;
      this.loopDone = undefined;
    }
    this.finishing = this.finish();
    await this.finishing;
  }

  /** Ends the incarnation: `onStop`, final status, audit. Runs once per incarnation. */
  async finish(): Promise<void> {
    const services = this.requireServices();
    const span = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": this.agent.name });
    await this.runHook("onStop", () => this.agent.onStop(), this.options.shutdownTimeoutMs);
    if (this.currentStatus === ProcessStatus.STOPPING) this.transition(ProcessStatus.STOPPED);
    const exit = this.exit;
    services.telemetry.endSpan(span);
    if (exit?.kind !== "crash") {
      void services.telemetry.audit("agent.stop", this.agent.name, { reason: exit?.reason ?? "stopped" });
    }
  }

  /** Called (through the agent) by the mailbox when a message lands while the loop is parked. */
  mailboxReady(): void {
    if (!this.driving) this.drive();
  }

  /** Starts the message loop of the current incarnation. Never two at once: `driving` guards it. */
  drive(): void {
    this.driving = true;
    this.loopDone = this.run(this.generation);
  }

  async run(generation: number): Promise<void> {
    await Promise.resolve(); // a handler never runs inside the call stack of whoever woke the loop
    let exited: boolean;
    try {
      exited = await this.loop(generation);
    } catch (error) {
      // Only a bug in the runtime lands here; never leave the agent half-running.
      if (generation === this.generation) {
        this.driving = false;
        if (this.currentStatus === ProcessStatus.RUNNING) this.crash(error);
        else if (this.currentStatus === ProcessStatus.SUSPENDED) {
          // SUSPENDED cannot crash (it runs no user code that may fail): stop it, keeping its marker.
          this.requireServices().logger.error(`'${this.agent.name}' hit an internal error while SUSPENDED; stopping it`, { error });
          this.beginSelfStop("error");
        }
      }
      exited = true;
    }
    if (!exited || generation !== this.generation || this.stopRequested) return;
    // Stopped on its own (STOP, halt) it takes no more messages: senders get MAILBOX_CLOSED, not silence.
    if (this.exit?.kind === "normal") this.close();
    this.finishing = this.finish();
    await this.finishing;
    this.parent?.childExited(this.agent, this.exit ?? { kind: "normal", reason: "stopped" }, this.starts);
  }

  /**
   * Dispatches messages until the mailbox is empty — then it parks (the
   * mailbox nudges it when work arrives) and returns `false` — or the
   * incarnation ends (`true`). An idle agent holds no pending promise.
   */
  async loop(generation: number): Promise<boolean> {
    const mailbox = this.mailbox;
    const scheduler = this.requireServices().scheduler;
    for (;;) {
      const pause = scheduler.tick();
      if (pause !== undefined) await pause;
      if (generation !== this.generation) return true;
      if (this.suspendRequest !== undefined) await this.applySuspendRequest();
      let message: Message | undefined;
      switch (this.currentStatus) {
        case ProcessStatus.SUSPENDED:
          message = mailbox.pollPriority();
          if (message === undefined) {
            this.driving = false;
            mailbox.park(this.agent, true);
            return false;
          }
          break;
        case ProcessStatus.RUNNING:
          message = mailbox.poll();
          if (message === undefined) {
            this.driving = false;
            mailbox.park(this.agent, false);
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
      if (isReservedType(message.type) || message.type === "civitas.eval.halt") await this.control(message);
      else await this.invoke(message, generation);
    }
  }

  /** Acts on a runtime control message (and `civitas.eval.halt`); unknown reserved types are ignored. */
  async control(message: Message): Promise<void> {
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
      case "_agency.suspend":
        this.requestSuspend(typeof message.payload.reason === "string" ? message.payload.reason : "", message);
        return;
      case "_agency.resume":
        await this.resumeFrom(message);
        return;
    }
  }

  async invoke(message: Message, generation: number): Promise<void> {
    const services = this.requireServices();
    const telemetry = services.telemetry;
    const span = telemetry.tracing
      ? telemetry.startSpan(
          "civitas.agent.handle",
          { "civitas.agent.name": this.agent.name, "civitas.message.type": message.type, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt },
          { traceId: message.traceId, spanId: message.spanId },
        )
      : undefined;
    this.current = message;
    this.currentSpan = span;
    let result: unknown;
    let failure: { error: unknown } | undefined;
    try {
      result = message.type === "civitas.eval.correction" ? await this.agent.onCorrection(message) : await this.agent.handle(message);
    } catch (error) {
      failure = { error };
    }
    telemetry.endSpan(span, failure?.error);
    if (generation !== this.generation) {
      // A stop gave up waiting for this handler: whatever it produced is dropped, it can no longer act.
      services.logger.warn(`'${this.agent.name}' finished message ${message.id} after its stop timed out; its result is dropped`, failure);
      return;
    }
    this.current = undefined;
    this.currentSpan = undefined;
    if (failure !== undefined) await this.onFailure(failure.error, message);
    else if (result !== undefined && result !== null) await this.deliverQuietly(result);
  }

  async onFailure(error: unknown, message: Message): Promise<void> {
    const services = this.requireServices();
    if (this.currentStatus !== ProcessStatus.RUNNING) {
      services.logger.error(`'${this.agent.name}' failed a message while ${this.currentStatus}`, { error, message: message.id });
      return;
    }
    let action: ErrorAction;
    try {
      action = await this.agent.onError(error, message);
    } catch (hookError) {
      services.logger.error(`'${this.agent.name}'.onError threw; escalating`, { error: hookError });
      action = ErrorAction.ESCALATE;
    }
    if (action === ErrorAction.RETRY && message.attempt < this.options.maxRetries) {
      const span = services.telemetry.startSpan("civitas.agent.retry", { "civitas.agent.name": this.agent.name, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt + 1 });
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
      services.logger.error(`'${this.agent.name}' gave up on message ${message.id} after ${this.options.maxRetries} retries`, { error });
    } else if (action !== ErrorAction.ESCALATE) {
      services.logger.error(`'${this.agent.name}'.onError returned ${describeValue(action)}, not an ErrorAction; escalating`);
    }
    this.crash(error);
  }

  crash(error: unknown): void {
    const services = this.requireServices();
    this.transition(ProcessStatus.CRASHED);
    this.exit = { kind: "crash", error };
    services.logger.error(`'${this.agent.name}' crashed`, { error });
    void services.telemetry.audit("agent.crash", this.agent.name, { error: errorText(error) });
  }

  beginSelfStop(reason: string): void {
    if (this.currentStatus !== ProcessStatus.RUNNING && this.currentStatus !== ProcessStatus.SUSPENDED) return;
    this.transition(ProcessStatus.STOPPING);
    this.exit = { kind: "normal", reason };
  }

  async notifyChildTerminated(message: Message): Promise<void> {
    const { name, reason } = message.payload;
    await this.runHook("onChildTerminated", () => this.agent.onChildTerminated(name as string, reason as ChildTerminationReason), this.options.shutdownTimeoutMs);
  }

  // ---- suspension ----------------------------------------------------------

  /** Records the intent to suspend; the loop acts on it at its next boundary. */
  requestSuspend(reason: string, request: Message | undefined): void {
    const pending = (this.suspendRequest ??= { reason, waiting: [], marker: undefined });
    pending.reason = reason;
    if (request !== undefined) pending.waiting.push(request);
    if (this.currentStatus === ProcessStatus.RUNNING && this.services !== undefined) {
      const now = this.services.clock.now();
      pending.marker = { reason, since: pending.marker?.since ?? isoTime(now), approver: null, suspensionId: pending.marker?.suspensionId ?? uuidv7(now) };
    }
    // An idle agent has no loop running to see the flag: start one.
    if (!this.driving && (this.currentStatus === ProcessStatus.RUNNING || this.currentStatus === ProcessStatus.SUSPENDED)) {
      this.box?.unpark();
      this.drive();
    }
  }

  async applySuspendRequest(): Promise<void> {
    const request = this.suspendRequest;
    if (request === undefined) return;
    if (this.currentStatus === ProcessStatus.RUNNING) {
      this.suspendRequest = undefined;
      await this.enterSuspended(request.reason, request.marker);
    } else if (this.currentStatus === ProcessStatus.SUSPENDED) {
      this.suspendRequest = undefined;
      await this.updateReason(request.reason);
    } else {
      return;
    }
    for (const waiting of request.waiting) this.answer(waiting);
  }

  /** S5: stop dispatching in memory first, then persist; a failed persist never un-suspends. */
  async enterSuspended(reason: string, prepared: SuspensionMarker | undefined): Promise<void> {
    const services = this.requireServices();
    const now = services.clock.now();
    const marker: SuspensionMarker = prepared ?? { reason, since: isoTime(now), approver: null, suspensionId: uuidv7(now) };
    const span = services.telemetry.startSpan("civitas.agent.suspend", {
      "civitas.agent.name": this.agent.name,
      "civitas.suspend.reason": reason,
      "civitas.suspend.id": marker.suspensionId,
    });
    this.transition(ProcessStatus.SUSPENDED);
    this.setMarker(marker);
    const durable = await this.persistMarker("suspend", span);
    await this.runHook("onSuspend", () => this.agent.onSuspend(reason), this.options.shutdownTimeoutMs);
    await services.telemetry.audit("agent.suspend", this.agent.name, { reason, suspensionId: marker.suspensionId, since: marker.since, durable });
    span?.setAttribute("civitas.suspend.durable", durable);
    services.telemetry.endSpan(span);
  }

  /** S10: suspending a suspended agent keeps `since` and `suspensionId`, updates the reason. */
  async updateReason(reason: string): Promise<void> {
    const marker = this.marker;
    if (marker === undefined || marker.reason === reason) return;
    this.setMarker({ ...marker, reason });
    await this.persistMarker("suspend", undefined);
    await this.requireServices().telemetry.audit("agent.suspend.update", this.agent.name, { reason, suspensionId: marker.suspensionId });
  }

  async resumeFrom(request: Message): Promise<void> {
    const { approver, suspensionId } = request.payload;
    try {
      assertApprover(this.agent.name, approver);
      if (suspensionId !== undefined && (typeof suspensionId !== "string" || suspensionId.length === 0)) {
        throw new InvalidArgumentError("suspensionId", `resume('${this.agent.name}'): suspensionId must be a non-empty string, got ${describeValue(suspensionId)}`);
      }
      const marker = this.marker;
      if (this.currentStatus !== ProcessStatus.SUSPENDED || marker === undefined) {
        if (suspensionId !== undefined) throw new StaleApprovalError(this.agent.name, suspensionId, undefined);
      } else {
        if (suspensionId !== undefined && suspensionId !== marker.suspensionId) throw new StaleApprovalError(this.agent.name, suspensionId, marker.suspensionId);
        await this.authorize(approver, marker);
        // A stop that began while the approval was being decided wins: no receipt, the pause is kept.
        if (this.currentStatus !== ProcessStatus.SUSPENDED) {
          throw new MailboxClosedError(`'${this.agent.name}' began stopping before the resume took effect; it stays paused (its marker is kept)`);
        }
        await this.leaveSuspended(approver, marker);
        this.answer(request);
        // Let runtime.resume() resolve before the first business message after the pause is taken.
        await new Promise<void>((resolve) => setImmediate(resolve));
        return;
      }
      this.answer(request);
    } catch (error) {
      this.answer(request, error as Error);
    }
  }

  async authorize(approver: string, marker: SuspensionMarker): Promise<void> {
    const hook = this.requireServices().authorizeResume;
    if (hook === undefined) return;
    let allowed: boolean;
    try {
      allowed = await hook(this.agent.name, approver, { ...marker });
    } catch (cause) {
      throw new ResumeRefusedError(this.agent.name, approver, { cause });
    }
    if (allowed !== true) throw new ResumeRefusedError(this.agent.name, approver);
  }

  /** The receipt comes before the effect: audit, then clear and persist, then RUNNING, then `onResume`. */
  async leaveSuspended(approver: string, marker: SuspensionMarker): Promise<void> {
    const services = this.requireServices();
    const span = services.telemetry.startSpan("civitas.agent.resume", {
      "civitas.agent.name": this.agent.name,
      "civitas.suspend.id": marker.suspensionId,
      "civitas.resume.approver": approver,
    });
    await services.telemetry.audit("agent.resume", this.agent.name, { approver, suspensionId: marker.suspensionId, reason: marker.reason });
    this.setMarker(undefined);
    await this.persistMarker("resume", span);
    if (this.currentStatus !== ProcessStatus.SUSPENDED) {
      // A stop began while the receipt and the cleared marker were being written. The resume took
      // effect (its receipt is on record, its marker is gone), so it is reported as done; the stop
      // still wins, so this incarnation neither runs nor calls onResume.
      services.telemetry.endSpan(span);
      return;
    }
    this.transition(ProcessStatus.RUNNING);
    await this.runHook("onResume", () => this.agent.onResume(approver), this.options.shutdownTimeoutMs);
    services.telemetry.endSpan(span);
  }

  /** Persists the marker change; on failure logs and records degraded durability instead of throwing. */
  async persistMarker(change: "suspend" | "resume", span: Span | undefined): Promise<boolean> {
    try {
      await this.persist();
      return true;
    } catch (error) {
      const consequence =
        change === "suspend"
          ? "it stays SUSPENDED in memory, but a crash now would restart it without the pause"
          : "it runs again, but a crash now would restart it SUSPENDED";
      this.requireServices().logger.warn(`degraded durability: '${this.agent.name}' could not persist its ${change}; ${consequence}`, { error });
      span?.addEvent("civitas.durability.degraded", { "exception.message": error instanceof Error ? error.message : describeValue(error) });
      return false;
    }
  }

  setMarker(marker: SuspensionMarker | undefined): void {
    this.marker = marker;
    const state = this.agent.state;
    if (marker === undefined) delete state[SUSPENSION_KEY];
    else state[SUSPENSION_KEY] = { ...marker };
  }

  /** Settles a runtime control request: resolves it, or rejects it with `error`. */
  answer(request: Message, error?: Error): void {
    if (request.correlationId === undefined) return;
    const bus = this.requireServices().bus;
    if (error !== undefined) bus.reject(request.correlationId, error);
    else void bus.deliver(composeReply(this.envelope(), request, {})).catch(() => undefined);
  }

  // ---- helpers -----------------------------------------------------------

  /** The single path every persist takes. */
  async persist(): Promise<void> {
    await this.requireServices().store.set(this.agent.name, persistableState(this.agent.state, this.marker ?? this.suspendRequest?.marker));
  }

  transition(to: ProcessStatus): void {
    const from = this.currentStatus;
    if (!isLegalTransition(from, to)) throw new IllegalTransitionError(this.agent.name, from, to);
    this.currentStatus = to;
    this.services?.events.emit("agent.status", this.agent.name, from, to);
  }

  /** Refuses a reserved type or a non-JSON payload before any target is chosen. */
  checkOutgoing(payload: JsonObject, options: SendOptions | undefined): void {
    if (options?.type !== undefined && isReservedType(options.type)) throw new ReservedMessageTypeError(options.type);
    if (!isJsonObject(payload)) assertJsonObject(payload, `payload from '${this.agent.name}'`);
  }

  envelope(): EnvelopeContext {
    return { sender: this.agent.name, nowMs: this.requireServices().clock.now(), current: this.current, span: this.currentSpan };
  }

  /** Delivers a message the agent produced as a result; a failure is logged, not a crash. */
  async deliverQuietly(message: unknown, fromRuntime = false): Promise<void> {
    const services = this.requireServices();
    if (!isMessage(message)) {
      services.logger.warn(`'${this.agent.name}'.handle returned ${describeValue(message)}; return this.reply(...) or nothing`);
      return;
    }
    if (!fromRuntime && isReservedType(message.type)) {
      // Application code must never forge runtime control, whatever path it takes.
      services.logger.error(`'${this.agent.name}'.handle returned a '${message.type}' message; reserved types are dropped`, { error: new ReservedMessageTypeError(message.type) });
      return;
    }
    try {
      await services.bus.deliver(message);
    } catch (error) {
      services.logger.warn(`'${this.agent.name}' could not deliver its result to '${message.recipient}'`, { error });
    }
  }

  /** Runs a hook with a deadline; its failure or hang is logged, never thrown. */
  async runHook(hook: string, fn: () => Promise<unknown>, timeoutMs: number): Promise<void> {
    const services = this.requireServices();
    const run = (async () => fn())().catch((error: unknown) => {
      services.logger.error(`'${this.agent.name}'.${hook} threw`, { error });
    });
    if (!(await settlesWithin(run, services.clock, timeoutMs))) {
      services.logger.warn(`'${this.agent.name}'.${hook} did not finish within ${timeoutMs} ms; moving on`);
    }
  }

  requireServices(): RuntimeServices {
    if (this.services === undefined) throw notAttached(this.agent.name);
    return this.services;
  }

  dynamicHost() {
    const parent = this.parent;
    if (parent === undefined || !isDynamicHost(parent)) {
      throw new NoDynamicSupervisorError(
        this.agent.name,
        `'${this.agent.name}' is not supervised by a DynamicSupervisor, so it cannot spawn, despawn or stop agents; put it under one, or call the DynamicSupervisor directly`,
      );
    }
    return parent;
  }
}

export function notAttached(name: string): RuntimeStateError {
  return new RuntimeStateError("RUNTIME_NOT_STARTED", `agent '${name}' does not belong to a runtime yet; pass it (or its supervisor) to new Runtime({ root })`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
