import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import { checkSignal } from "../errors/check-signal.js";
import {
  AgentNotFoundError,
  IllegalTransitionError,
  InvalidArgumentError,
  MailboxClosedError,
  MailboxFullError,
  NoDynamicSupervisorError,
  ReservedMessageTypeError,
  RuntimeStateError,
  StartFailedError,
  type StateFencedError,
} from "../errors/errors.js";
import { HandlerFailedError } from "../errors/handler-failed-error.js";
import { NOT_PENDING } from "../bus/message-bus.js";
import { assertJsonObject, findNonJson, isJsonObject, type JsonObject } from "../message/json.js";
import { checkNonNegative, envelopeProblem, isReply, nextAttempt, type Message } from "../message/message.js";
import { DEFAULT_MESSAGE_TYPE, isReservedType, priorityOf } from "../message/system-types.js";
import { forceMessage, Mailbox, offerTrusted, queuedBusiness, requeueMessage, RESOLVED, type MailboxConsumer } from "../mailbox/mailbox.js";
import { snapshotMessage } from "../message/snapshot.js";
import type { RuntimeServices } from "../runtime/services.js";
import type { ChildExit, ChildParent, StopOptions } from "../supervision/child.js";
import { isDynamicHost, type ChildTerminationReason, type DynamicHost } from "../supervision/dynamic-host.js";
import { systemClock, type Clock } from "../time/clock.js";
import { settlesUnlessAbandoned, settlesWithin } from "../time/deadline.js";
import { checkStoredState } from "../state/state-record.js";
import { nonNegativeInteger, type ResolvedAgentOptions } from "./agent-options.js";
import { composeReply, isComposedReply, isMessage, type EnvelopeContext } from "./envelope.js";
import { ErrorAction } from "./error-action.js";
import { persistableState, readMarker } from "./suspension.js";
import { anchoredState } from "../audit/audit-anchor.js";
import { afterFailedPersist } from "./fencing.js";
import { isLegalTransition, ProcessStatus } from "./process-status.js";
import type { AgentProcess, SendOptions } from "./agent-process.js";
import { SuspensionControl } from "./suspension-control.js";
import { cancelOnHalt } from "./pause-settlement.js";
import { isMintedControl } from "./control-authority.js";


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
export class ProcessRunner implements MailboxConsumer, EnvelopeContext {
  currentStatus = ProcessStatus.INITIALIZING;
  services: RuntimeServices | undefined;
  parent: ChildParent | undefined;
  box: Mailbox | undefined;
  initialState: string | undefined;
  generation = 0;
  starts = 0;
  starting: Promise<void> | undefined;
  stopping: Promise<void> | undefined;
  finishing: Promise<unknown> | undefined;
  loopDone: Promise<void> | undefined;
  driving = false;
  exit: ChildExit | undefined;
  stopRequested = false;
  drainAll = false;
  /** For a drain-all stop: the business messages taken before this mark were queued when it began (see `Mailbox.businessTakenCount`). */
  drainEnd = 0;
  /** The bound of a stop's steps (its drain, `onStop`): the stop's own `timeoutMs`, else `shutdownTimeoutMs`. */
  stopTimeoutMs: number | undefined;
  /**
   * Aborts the deliveries of what this incarnation's handlers returned, when a
   * stop gives up on it. Made on first need: an idle agent holds none.
   */
  results: AbortController | undefined;
  current: Message | undefined;
  /** The span of the message being handled, when tracing. */
  span: Span | undefined;
  /** The agent's name, as the sender of what it composes. */
  readonly sender: string;
  /** The runtime's clock once attached (stamps what the agent composes). */
  clock: Clock = systemClock;

  /** The loop of an incarnation whose stop gave up waiting for its handler: the next loop dispatches nothing until it ends. */
  abandoned: Promise<void> | undefined;
  /** Whether this incarnation was told to stop while it was starting: its `onStart` then gets `shutdownTimeoutMs`. */
  private stopWhileStarting = false;
  /** Removed from its runtime for good (its suspension cleared): nothing of it is written any more. */
  removed = false;
  /** An `onStart` a stop gave up on that has not returned yet: the next start's `onStart` waits for it. */
  private abandonedOnStart: Promise<void> | undefined;
  /** Resolves when the start in flight leaves INITIALIZING (or fails): what a stop during a start waits for. */
  private initialized: Promise<void> | undefined;
  /** Gives up on the `onStart` running now, after `shutdownTimeoutMs` (set while it runs). */
  private abandonOnStart: (() => void) | undefined;
  /** Hooks (`onStop`, `onSuspend`, `onResume`, `onChildTerminated`) running now, including ones past their deadline. */
  hooksRunning = 0;
  /** Settles once the last crash's `agent.crash` receipt is recorded (or failed to be): the restart waits for it. */
  crashRecorded: Promise<boolean> | undefined;
  /** Why this incarnation's state could not be restored: persists are refused with it, so the stored record survives. */
  unrestored: unknown;
  /** Set when a persist was refused with `STATE_FENCED`: another process owns the agent now; see `afterFailedPersist`. */
  fencedOut: StateFencedError | undefined;

  /** The agent's pause: its marker, a pending request to suspend, resume. */
  readonly suspension: SuspensionControl;

  constructor(
    readonly agent: AgentProcess,
    readonly options: ResolvedAgentOptions,
  ) {
    this.sender = agent.name;
    this.suspension = new SuspensionControl(this);
  }

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
    this.clock = services.clock;
    this.box = this.newMailbox();
  }

  newMailbox(): Mailbox {
    const services = this.requireServices();
    return new Mailbox({
      capacity: this.options.mailboxSize,
      priorityCapacity: this.options.priorityMailboxSize,
      clock: services.clock,
      onExpired: (message) => {
        // Reported from inside the loop's dequeue: a listener's bug must not crash this agent.
        try {
          services.expired(message);
        } catch (error) {
          services.logger.error(`a 'message.expired' listener threw for message ${message.id} to '${this.agent.name}'`, { error });
        }
      },
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
    // Nobody will answer the requests still queued here (runtime control requests, asks):
    // fail them rather than leave their callers waiting out their timeouts.
    const pending = [...(this.suspension.request?.waiting ?? [])];
    const control: Message[] = [];
    for (let m = box.pollPriority(); m !== undefined; m = box.pollPriority()) control.push(m);
    for (const m of [...control, ...queuedBusiness(box)]) {
      if (m.replyTo !== undefined && m.correlationId !== undefined) pending.push(m);
    }
    this.suspension.request = undefined;
    for (const request of pending) {
      this.refuse(request, new MailboxClosedError(`'${this.agent.name}' stopped for good before it handled ${request.type} ${request.id}`));
    }
  }



  /**
   * Bounds a start in flight because a stop is coming: its `onStart` gets
   * `shutdownTimeoutMs` (also when it has not begun yet), and no loop starts
   * after it, so the stop takes nothing queued.
   * @internal
   */
  abandonStart(): void {
    if (this.starting === undefined || this.currentStatus !== ProcessStatus.INITIALIZING) return;
    this.stopWhileStarting = true;
    this.abandonOnStart?.();
  }

  /** @internal */
  startChild(): Promise<void> {
    const starting = this.starting;
    if (starting !== undefined) {
      // A start still announcing a restored pause when a stop ended it: the new start follows it.
      if (this.currentStatus === ProcessStatus.STOPPED) {
        return starting.catch(() => undefined).then(() => this.startChild());
      }
      return starting;
    }
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
          if (this.starting === undefined) return; // never started
          // Stopped while starting (also before onStart began): onStart gets shutdownTimeoutMs, as when the runtime
          // stops, and no loop begins; once the start is past onStart (the rest, such as announcing a restored
          // pause, goes on in the background), it is stopped as usual.
          this.abandonStart();
          await Promise.race([this.starting.catch(() => undefined), this.initialized]);
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
    this.results = undefined;
    this.starts++;
    this.stopRequested = false;
    this.drainAll = false;
    this.stopTimeoutMs = undefined;
    this.stopWhileStarting = false;
    let initialized!: () => void;
    this.initialized = new Promise<void>((resolve) => (initialized = resolve));
    this.suspension.startedAfter = this.starts > 1 ? services.controlSent.count : undefined;
    this.driving = false;
    this.exit = undefined;
    this.stopping = undefined;
    this.finishing = undefined;
    const span = services.telemetry.startSpan("civitas.agent.start", { "civitas.agent.name": this.agent.name, "civitas.agent.incarnation": this.starts });
    let restored = false;
    let settledInStore = false;
    this.unrestored = undefined;
    try {
      // Fenced out (another process owns it): never started again in this process.
      if (this.fencedOut !== undefined) throw this.fencedOut;
      if (this.initialState === undefined) {
        assertJsonObject(this.agent.state, `initial state of '${this.agent.name}'`);
        this.initialState = JSON.stringify(this.agent.state);
      }
      // A custom store may hand back what no agent can run on (Infinity, a Date): STATE_SCHEMA, as for a bad record.
      const fetched = await services.store.get(this.agent.name);
      const stored = fetched === undefined ? undefined : checkStoredState(this.agent.name, fetched);
      // The same instance restarting knows its pause at least as well as the store does,
      // and a pause it resumed from stays settled even where the store still holds it.
      const storedMarker = stored === undefined ? undefined : readMarker(this.agent.name, stored);
      settledInStore = storedMarker !== undefined && storedMarker.suspensionId === this.suspension.lastSettled;
      this.suspension.marker ??= settledInStore ? undefined : storedMarker;
      this.agent.state = (stored ?? JSON.parse(this.initialState)) as JsonObject;
      this.suspension.setMarker(this.suspension.marker);
      restored = true;
      // An onStart a stop gave up on gets up to shutdownTimeoutMs more to return before the next one begins.
      const previous = this.abandonedOnStart;
      const onStart = previous === undefined ? this.callOnStart() : this.afterAbandonedOnStart(previous);
      if (!(await this.settlesUnlessStopped(onStart))) {
        const abandoned = onStart.catch(() => undefined);
        this.abandonedOnStart = abandoned;
        void abandoned.then(() => {
          if (this.abandonedOnStart === abandoned) this.abandonedOnStart = undefined;
        });
        if (services.stopping.aborted) {
          throw new RuntimeStateError("RUNTIME_STOPPED", `the runtime stopped while '${this.agent.name}'.onStart was running, and it did not finish within ${this.options.shutdownTimeoutMs} ms; the start is abandoned`);
        }
        throw new Error(`'${this.agent.name}' was stopped while its onStart was running, and onStart did not finish within ${this.options.shutdownTimeoutMs} ms; the start is abandoned`);
      }
      await onStart;
      const fenced = this.fencedOut as StateFencedError | undefined; // set meanwhile when onStart's checkpoint found the agent owned elsewhere
      if (fenced !== undefined) throw fenced;
    } catch (error) {
      this.transition(ProcessStatus.CRASHED);
      this.suspension.deadline.cancel();
      initialized();
      services.telemetry.endSpan(span, error);
      // The crash's receipt is durable before the supervisor hears of the failure (and restarts).
      const crashRecorded = services.telemetry.audit("agent.crash", this.agent.name, { phase: "start", error: errorText(error) });
      // onStop still runs, but a checkpoint from it must not overwrite the record that could not be read
      // (STATE_SCHEMA) with the initial state: persists fail with the restore's error until the next start.
      if (!restored) this.unrestored = error;
      const stopSpan = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": this.agent.name });
      this.finishing = this.runHook("onStop", () => this.agent.onStop(), this.options.shutdownTimeoutMs);
      await this.finishing;
      services.telemetry.endSpan(stopSpan);
      await this.receiptRecorded("agent.crash", crashRecorded);
      throw new StartFailedError(this.agent.name, { cause: error });
    }
    this.transition(this.suspension.marker === undefined ? ProcessStatus.RUNNING : ProcessStatus.SUSPENDED);
    initialized();
    services.telemetry.endSpan(span);
    const startRecorded = services.telemetry.audit("agent.start", this.agent.name, {
      incarnation: this.starts,
      ...(this.suspension.marker === undefined ? {} : { suspensionId: this.suspension.marker.suspensionId }),
    });
    // A pause stored before it was announced (a crash or stop came first) gets its receipt and onSuspend now, before any message.
    if (this.suspension.marker?.announced === false) await this.suspension.announceRestored();
    // The store still holds a pause this agent resumed from (that resume's write failed): write it cleared now.
    else if (settledInStore && this.suspension.marker === undefined) await this.suspension.persistMarker("resume", undefined);
    // A stop that came meanwhile (this agent's, or the runtime's) has begun, or will begin, the loop itself.
    if (services.stopping.aborted) this.stopWhileStarting = true;
    if (this.currentStatus !== ProcessStatus.STOPPING && this.currentStatus !== ProcessStatus.STOPPED) this.mailboxReady();
    // runtime.start() resolves once this receipt is recorded: a kill right after leaves it in the log. Not awaited
    // here: a crash while it is being written must find this start over, so its restart can begin.
    if (services.telemetry.auditing) services.telemetry.track(this.receiptRecorded("agent.start", startRecorded));
  }

  /**
   * Waits until an audit receipt is recorded by the sink (for a
   * `JsonlAuditSink`: fsync'ed), at most `shutdownTimeoutMs`: a sink that
   * never answers is logged, not waited on forever. No wait without a sink.
   */
  async receiptRecorded(event: string, recording: Promise<boolean>): Promise<void> {
    const services = this.requireServices();
    if (!services.telemetry.auditing) return;
    const limitMs = this.options.shutdownTimeoutMs;
    if (!(await settlesWithin(recording, services.clock, limitMs))) {
      services.logger.warn(`audit: the sink did not record '${event}' of '${this.agent.name}' within ${limitMs} ms (the agent's shutdownTimeoutMs); moving on without waiting for it`);
    }
  }

  /**
   * Calls `onStart` once the one a stop gave up on has returned, or, if it
   * has not within `shutdownTimeoutMs`, anyway, with a warning: a start must
   * not hang for good on code the runtime cannot cancel.
   */
  private async afterAbandonedOnStart(previous: Promise<void>): Promise<void> {
    const services = this.requireServices();
    if (!(await settlesWithin(previous, services.clock, this.options.shutdownTimeoutMs))) {
      services.logger.warn(`'${this.agent.name}'.onStart of an earlier start, which a stop gave up on, is still running after ${this.options.shutdownTimeoutMs} ms; starting again anyway (two onStart calls now overlap)`);
    }
    await this.callOnStart();
  }

  /** Calls `onStart`; one that is not async returns no promise, one that throws becomes a rejection. */
  private callOnStart(): Promise<void> {
    try {
      return Promise.resolve(this.agent.onStart());
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what onStart threw, whatever it is: the start fails with it as cause
      return Promise.reject(error);
    }
  }

  /**
   * Waits for `onStart`; once the runtime stops, or this agent is stopped
   * (`stopChild` while INITIALIZING), at most `shutdownTimeoutMs` more.
   */
  private async settlesUnlessStopped(onStart: Promise<void>): Promise<boolean> {
    const services = this.requireServices();
    const stop = new AbortController();
    const abandon = (): void => {
      // The runtime stopping is a stop during this start too: no loop begins after it, so nothing queued is taken.
      this.stopWhileStarting = true;
      stop.abort();
    };
    services.stopping.addEventListener("abort", abandon, { once: true });
    if (services.stopping.aborted || this.stopWhileStarting) abandon();
    this.abandonOnStart = abandon;
    try {
      return await settlesUnlessAbandoned(onStart, stop.signal, services.clock, this.options.shutdownTimeoutMs);
    } finally {
      services.stopping.removeEventListener("abort", abandon);
      this.abandonOnStart = undefined;
    }
  }

  async requestStop(options: StopOptions): Promise<void> {
    const services = this.requireServices();
    const timeoutMs = nonNegativeInteger("timeoutMs", options.timeoutMs ?? this.options.shutdownTimeoutMs);
    this.stopTimeoutMs = timeoutMs;
    this.stopRequested = true;
    // A suspended agent is never drained: its queued business is unapproved work.
    this.drainAll = options.drain === "all" && this.currentStatus !== ProcessStatus.SUSPENDED;
    // "all" is what is queued now: what arrives during the drain (an agent feeding itself, busy senders) waits, as with "current".
    this.drainEnd = this.mailbox.businessTakenCount + this.mailbox.size;
    this.exit = { kind: "normal", reason: "stopped" };
    this.transition(ProcessStatus.STOPPING);
    this.mailbox.unpark();
    if (!this.driving) this.drive();
    if (!(await settlesWithin(this.loopDone ?? Promise.resolve(), services.clock, timeoutMs))) {
      services.logger.warn(
        `'${this.agent.name}' did not finish its message within ${timeoutMs} ms; stopping it anyway (its handle() keeps running, its result will be dropped, and a restarted '${this.agent.name}' handles nothing until it returns)`,
      );
      this.generation++;
      // What the abandoned incarnation is still delivering (a result to a full agent) is dropped, not waited for.
      this.results?.abort(new RuntimeStateError("RUNTIME_STOPPED", `'${this.agent.name}' was stopped before this result of its abandoned handler was delivered; it is dropped`));
      // The abandoned handler is no longer "the message being handled": reply() from onStop (or from it) must not answer it.
      this.current = undefined;
      this.span = undefined;
      this.abandoned = this.loopDone;
      this.loopDone = undefined;
    }
    this.finishing = this.finish();
    await this.finishing;
  }

  /** Ends the incarnation: `onStop`, final status, audit. Runs once per incarnation. */
  async finish(): Promise<void> {
    const services = this.requireServices();
    const span = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": this.agent.name });
    this.suspension.deadline.cancel(); // a pause kept by the stop is armed again by the next start
    // A pause asked for from handle() that the stop came before is kept, as a restart would keep it.
    await this.suspension.keepAskedPause(() => JSON.parse(this.initialState ?? "{}") as JsonObject);
    await this.runHook("onStop", () => this.agent.onStop(), this.stopTimeoutMs ?? this.options.shutdownTimeoutMs);
    if (this.currentStatus === ProcessStatus.STOPPING) this.transition(ProcessStatus.STOPPED);
    // Stopped for good while the runtime stops: no one will take what is queued, so senders still
    // waiting for room (an agent not stopped yet) get MAILBOX_CLOSED now instead of hanging their own stop.
    if (services.stopping.aborted) this.close();
    const exit = this.exit;
    services.telemetry.endSpan(span);
    if (exit?.kind !== "crash") {
      // The stop (and so runtime.stop()) resolves once its receipt is recorded.
      await this.receiptRecorded("agent.stop", services.telemetry.audit("agent.stop", this.agent.name, { reason: exit?.reason ?? "stopped" }));
    }
  }

  /**
   * Called (through the agent) by the mailbox when a message lands while the
   * loop is parked, and by a start when it is done: begins the loop unless it
   * runs. An agent told to stop while it was starting waits for that stop to
   * begin the loop, so nothing queued slips in first.
   */
  mailboxReady(): void {
    if (!this.driving && !this.stopWhileStarting) this.drive();
  }

  /** Starts the message loop of the current incarnation. Never two at once: `driving` guards it. */
  drive(): void {
    this.driving = true;
    this.loopDone = this.run(this.generation);
  }

  /**
   * The message loop of incarnation `generation`: dispatches messages until
   * the mailbox is empty — then it parks (the mailbox nudges it when work
   * arrives, so an idle agent holds no pending promise) — or the incarnation
   * ends. One async frame per wake-up: the untraced dispatch of a business
   * message is inlined here, as it is the runtime's hot path.
   */
  async run(generation: number): Promise<void> {
    await WAKE; // a handler never runs inside the call stack of whoever woke the loop
    const abandoned = this.abandoned;
    if (abandoned !== undefined) {
      // Never two handlers at once, even when a stop gave up on one: wait for it (it cannot be killed).
      await abandoned;
      if (this.abandoned === abandoned) this.abandoned = undefined;
    }
    const mailbox = this.mailbox;
    const services = this.requireServices();
    const scheduler = services.scheduler;
    const telemetry = services.telemetry;
    try {
      for (;;) {
        // Only a dispatch counts towards the next yield: finding the mailbox empty (and parking) is not one.
        if (mailbox.size > 0 || mailbox.prioritySize > 0) {
          // After a yield, this dispatch is counted again: agents all woken by the same yield do not dispatch for free.
          for (let pause = scheduler.tick(); pause !== undefined; pause = scheduler.tick()) await pause;
        }
        if (generation !== this.generation) break;
        if (this.suspension.request !== undefined || this.suspension.deadline.due) {
          const applying = this.suspension.applySuspendRequest();
          if (applying !== undefined) await applying;
        }
        let message: Message | undefined;
        switch (this.currentStatus) {
          case ProcessStatus.RUNNING:
          case ProcessStatus.SUSPENDED: {
            const priorityOnly = this.currentStatus === ProcessStatus.SUSPENDED; // suspended: control messages only
            message = priorityOnly ? mailbox.pollPriority() : mailbox.poll();
            if (message === undefined) {
              this.driving = false;
              mailbox.park(this, priorityOnly);
              return;
            }
            if (priorityOnly && priorityOf(message.type) === 0) {
              // A business type on the priority lane (a hand-built message put into the mailbox) is business:
              // it waits with the rest of the business for the resume.
              services.logger.warn(`'${this.agent.name}' is SUSPENDED: message ${message.id} of type '${message.type}' came on the priority lane and waits with the business messages`);
              if (!mailbox.closed) forceMessage(mailbox, { ...message, priority: 0 });
              continue;
            }
            break;
          }
          case ProcessStatus.STOPPING:
            // A pause asked for (before or during the drain) makes the rest of the business unapproved work.
            message =
              this.drainAll && this.suspension.request === undefined
                ? (mailbox.pollPriority() ?? (mailbox.businessTakenCount < this.drainEnd ? mailbox.poll() : undefined))
                : undefined;
            break;
          default:
            message = undefined;
        }
        if (message === undefined) {
          this.driving = false;
          break;
        }
        const type = message.type;
        if (isReservedType(type) || type === "civitas.eval.halt") {
          const acting = this.control(message, type); // most control messages act at once: no promise to wait for
          if (acting !== undefined) await acting;
          continue;
        }
        const span = telemetry.tracing
          ? telemetry.startMessageSpan(
              "civitas.agent.handle",
              { "civitas.agent.name": this.agent.name, "civitas.message.type": type, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt },
              message,
            )
          : undefined;
        this.current = message;
        this.span = span;
        let result: unknown;
        let failure: { error: unknown } | undefined;
        try {
          result = type === "civitas.eval.correction" ? await this.agent.onCorrection(message) : await this.agent.handle(message);
        } catch (error) {
          failure = { error };
        }
        if (span !== undefined) telemetry.endSpan(span, failure?.error);
        if (generation !== this.generation) {
          // A stop gave up waiting for this handler: whatever it produced is dropped, it can no longer act.
          services.logger.warn(`'${this.agent.name}' finished message ${message.id} after its stop timed out; its result is dropped`, failure);
          break;
        }
        this.current = undefined;
        this.span = undefined;
        if (failure !== undefined) await this.onFailure(failure.error, message, span);
        else if (result !== undefined && result !== null) {
          const routing = this.routeResult(result);
          if (routing !== undefined) await routing;
        }
      }
    } catch (error) {
      // Only a bug in the runtime lands here; never leave the agent half-running.
      if (generation === this.generation) {
        this.driving = false;
        if (this.currentStatus === ProcessStatus.RUNNING) this.crash(error);
        else if (this.currentStatus === ProcessStatus.SUSPENDED) {
          // SUSPENDED cannot crash (it runs no user code that may fail): stop it, keeping its marker.
          services.logger.error(`'${this.agent.name}' hit an internal error while SUSPENDED; stopping it`, { error });
          this.beginSelfStop("error");
        }
      }
    }
    if (generation !== this.generation || this.stopRequested) return;
    // Stopped on its own (STOP, halt) it takes no more messages: senders get MAILBOX_CLOSED, not silence.
    if (this.exit?.kind === "normal") this.close();
    this.finishing = this.finish();
    await this.finishing;
    // A crash's receipt is durable before the supervisor restarts the agent.
    if (this.exit?.kind === "crash" && this.crashRecorded !== undefined) await this.receiptRecorded("agent.crash", this.crashRecorded);
    this.parent?.childExited(this.agent, this.exit ?? { kind: "normal", reason: "stopped" }, this.starts);
  }

  /**
   * Acts on a runtime control message (and `civitas.eval.halt`); unknown
   * reserved types are ignored. `type` is the message's type as the loop read
   * it, once. An `_agency.*` message acts only if the runtime minted it
   * (control-authority.ts) for this very agent (a minted message taken out
   * of one mailbox cannot act in another); any other is dropped and
   * reported. The halt is the kill switch, anyone's to send.
   */
  control(message: Message, type: string): Promise<void> | undefined {
    if (type !== "civitas.eval.halt" && !(isMintedControl(message) && message.recipient === this.agent.name)) {
      this.reportForgedControl(message, type);
      return undefined;
    }
    switch (type) {
      case "_agency.shutdown":
        this.beginSelfStop("shutdown");
        return undefined;
      case "civitas.eval.halt": {
        // The kill switch: a paused agent stops too, and its pause is cancelled on the record.
        const paused = this.currentStatus === ProcessStatus.SUSPENDED;
        this.beginSelfStop("halt");
        return paused ? cancelOnHalt(this.suspension, message.sender) : undefined;
      }
      case "_agency.heartbeat":
        return message.replyTo === undefined ? undefined : this.deliverQuietly(composeReply(this, message, {}, "_agency.heartbeat_ack"), true);
      case "_agency.deregister":
        return this.notifyChildTerminated(message);
      case "_agency.suspend":
        this.suspension.requestSuspend(typeof message.payload.reason === "string" ? message.payload.reason : "", message);
        return undefined;
      case "_agency.resume":
        return this.suspension.resumeFrom(message);
      default:
        return undefined;
    }
  }

  async onFailure(error: unknown, message: Message, handleSpan?: Span): Promise<void> {
    const services = this.requireServices();
    const generation = this.generation;
    // A failure while stopping (in a drain, or in the message a stop came during) still goes through onError.
    if (this.currentStatus !== ProcessStatus.RUNNING && this.currentStatus !== ProcessStatus.STOPPING) {
      services.logger.error(`'${this.agent.name}' failed a message while ${this.currentStatus}`, { error, message: message.id });
      this.failRequest(message, error, "none (onError was not asked)");
      return;
    }
    let action: ErrorAction;
    try {
      action = await this.agent.onError(error, message);
    } catch (hookError) {
      services.logger.error(`'${this.agent.name}'.onError threw; escalating`, { error: hookError });
      action = ErrorAction.ESCALATE;
    }
    if (generation !== this.generation) {
      // A stop gave up on this incarnation while onError ran: its answer must not act on the next one.
      services.logger.warn(`'${this.agent.name}'.onError answered after a stop gave up on it; its answer (${describeValue(action)}) is dropped`, { error });
      this.failRequest(message, error, action);
      return;
    }
    if (this.currentStatus === ProcessStatus.STOPPING) {
      // On its way out, it cannot crash or stop again. A retry goes back to the mailbox: next in a drain-all,
      // otherwise queued with the rest for the next incarnation (a restart keeps the mailbox).
      if (action === ErrorAction.RETRY && message.attempt < this.options.maxRetries && !this.mailbox.closed) {
        if (this.drainAll) requeueMessage(this.mailbox, nextAttempt(message));
        else forceMessage(this.mailbox, nextAttempt(message));
      } else {
        this.failRequest(message, error, action);
        if (action === ErrorAction.SKIP) return;
        const drainEnds = this.drainAll ? "; the drain ends, what is still queued is left unhandled" : "";
        this.drainAll = false;
        services.logger.error(
          `'${this.agent.name}' failed a message while STOPPING (${message.id}, onError: ${describeValue(action)}): on its way out it cannot crash or stop again, so the message is dropped${drainEnds}`,
          { error },
        );
      }
      return;
    }
    if (this.currentStatus !== ProcessStatus.RUNNING) {
      this.failRequest(message, error, action);
      return;
    }
    if (action === ErrorAction.RETRY && message.attempt < this.options.maxRetries) {
      // A child of the failed handle span, in the message's own trace: never in whatever context woke the loop.
      const span = services.telemetry.startChildSpan("civitas.agent.retry", { "civitas.agent.name": this.agent.name, "civitas.message.id": message.id, "civitas.message.attempt": message.attempt + 1 }, handleSpan, message);
      forceMessage(this.mailbox, nextAttempt(message));
      services.telemetry.endSpan(span);
      return;
    }
    // Anything else ends the message: the ask waiting for it learns so now, not at its timeout.
    if (action === ErrorAction.SKIP || action === ErrorAction.STOP) {
      this.failRequest(message, error, action);
      if (action === ErrorAction.STOP) this.beginSelfStop("stop");
      return;
    }
    if (action === ErrorAction.RETRY) {
      services.logger.error(`'${this.agent.name}' gave up on message ${message.id} after ${this.options.maxRetries} retries`, { error });
    } else if (action !== ErrorAction.ESCALATE) {
      services.logger.error(`'${this.agent.name}'.onError returned ${describeValue(action)}, not an ErrorAction; escalating`);
    }
    this.crash(error);
    // The crash is on record before the caller hears of it.
    if (this.crashRecorded !== undefined) await this.receiptRecorded("agent.crash", this.crashRecorded);
    this.failRequest(message, error, action);
  }

  /**
   * Rejects the ask waiting for `message`, if it is a request and one still
   * waits, with `HANDLER_FAILED` carrying `error`: its handler failed for
   * good (`action` ended it), so no reply will come.
   */
  failRequest(message: Message, error: unknown, action: unknown): void {
    if (message.replyTo === undefined || message.correlationId === undefined) return;
    const answered = typeof action === "string" ? action : describeValue(action);
    this.refuse(message, new HandlerFailedError(this.agent.name, message.id, answered, message.attempt, error));
  }

  crash(error: unknown): void {
    const services = this.requireServices();
    this.transition(ProcessStatus.CRASHED);
    this.exit = { kind: "crash", error };
    services.logger.error(`'${this.agent.name}' crashed`, { error });
    this.crashRecorded = services.telemetry.audit("agent.crash", this.agent.name, { error: errorText(error) });
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

  // ---- helpers -----------------------------------------------------------

  /**
   * Resolves a runtime control request, and returns the promise the runtime
   * handed to whoever made it, so the agent can wait until that caller has
   * been told (`undefined` when nobody waits any more).
   */
  answer(request: Message): Promise<unknown> | undefined {
    if (request.correlationId === undefined) return undefined;
    const told = this.requireServices().bus.acknowledge(request.correlationId);
    if (told !== NOT_PENDING) return told;
    // Nobody waits for it any more (timed out, aborted): count it as the late reply it is.
    this.settleReply(composeReply(this, request, {}));
    return undefined;
  }

  /** Rejects a runtime control request with `error`. */
  refuse(request: Message, error: Error): void {
    if (request.correlationId !== undefined) this.requireServices().bus.reject(request.correlationId, error);
  }

  /** The single path every persist takes. */
  persist(): Promise<void> {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the restore's own error, a CivitasError
    if (this.unrestored !== undefined) return Promise.reject(this.unrestored);
    if (this.removed) return Promise.reject(removedError(this.agent.name));
    if (this.fencedOut !== undefined) return Promise.reject(this.fencedOut);
    try {
      const marker = this.suspension.marker;
      // A pause asked for and not entered yet, or entered and not announced yet, is stored flagged as not announced (see SuspensionMarker.announced).
      const pause = marker ?? this.suspension.request?.marker;
      const state = persistableState(this.agent.state, pause, this.agent.name, marker !== undefined && !this.suspension.announcementOwed);
      const services = this.requireServices();
      // A pause, and every write after the agent's first pause or settlement, records where the audit chain stood.
      const anchor = pause !== undefined || this.suspension.lastSettled !== undefined ? services.telemetry.anchorFor(this.agent.name) : undefined;
      return services.store.set(this.agent.name, anchoredState(state, anchor)).catch((error: unknown) => afterFailedPersist(this, error));
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a store (or the state check) threw synchronously: reject like an async store would
      return Promise.reject(error);
    }
  }

  transition(to: ProcessStatus): void {
    const from = this.currentStatus;
    if (!isLegalTransition(from, to)) throw new IllegalTransitionError(this.agent.name, from, to);
    this.currentStatus = to;
    try {
      this.services?.events.emit("agent.status", this.agent.name, from, to);
    } catch (error) {
      // A listener's bug must not stop the transition halfway (a RUNNING agent without its loop).
      this.services?.logger.error(`an 'agent.status' listener threw for '${this.agent.name}' (${from} -> ${to})`, { error });
    }
  }

  /** Refuses a reserved type, a bad `ttlMs` or a non-JSON payload before any target is chosen. */
  checkOutgoing(payload: JsonObject, options: SendOptions | undefined): void {
    const type: unknown = options?.type;
    if (type !== undefined && (typeof type !== "string" || type.length === 0)) {
      throw new InvalidArgumentError("type", `'${this.agent.name}' tried to send a message of type ${describeValue(type)}; pass a non-empty string, or leave type out for '${DEFAULT_MESSAGE_TYPE}'`);
    }
    if (type !== undefined && isReservedType(type)) throw new ReservedMessageTypeError(type);
    checkSignal(options?.signal, `'${this.agent.name}' sending`);
    checkNonNegative("ttlMs", options?.ttlMs);
    if (!isJsonObject(payload)) assertJsonObject(payload, `payload from '${this.agent.name}'`);
  }

  /** Hands a reply `handle` returned to the ask waiting for it, at once; a failure is logged, not a crash. */
  settleReply(reply: Message): void {
    try {
      this.requireServices().bus.settleReply(reply);
    } catch (error) {
      this.requireServices().logger.warn(`'${this.agent.name}' could not deliver its reply to '${reply.recipient}'`, { error });
    }
  }

  /**
   * Delivers a message the agent sends itself. While it is busy with its own
   * code (see {@link ProcessRunner.busyWithOwnCode}) a full lane is refused
   * with `MAILBOX_FULL` instead of waited on: only the loop waiting for that
   * code could make room.
   */
  sendToSelf(message: Message, signal: AbortSignal | undefined): Promise<void> {
    try {
      checkSignal(signal, `'${this.agent.name}' sending to itself`);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checkSignal threw, a CivitasError
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const services = this.requireServices();
    const mailbox = this.mailbox;
    // Only the loop (busy with this very code, or one a stop gave up on) could make room: waiting would wait for itself.
    if (!this.busyWithOwnCode() || mailbox.closed) return services.bus.deliver(message, signal);
    try {
      if (offerTrusted(mailbox, message)) return RESOLVED;
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what offer threw, a CivitasError
      return Promise.reject(error);
    }
    return Promise.reject(new MailboxFullError(this.agent.name));
  }

  /**
   * Routes what `handle` returned: a reply settles its ask at once, another
   * message is delivered. What is routed is a frozen copy read once (see
   * `snapshotMessage`), never the object the handler still holds: editing it
   * afterwards, or a getter that answers differently on each read, changes
   * nothing. Anything that is not a well-formed message is logged and
   * dropped: it never reaches another agent.
   */
  routeResult(result: unknown): Promise<void> | undefined {
    const logger = this.requireServices().logger;
    if (!isMessage(result)) {
      logger.warn(`'${this.agent.name}'.handle returned ${describeValue(result)}; return this.reply(...) or nothing`);
      return undefined;
    }
    const composed = isComposedReply(result);
    let message: Message;
    try {
      message = snapshotMessage(result);
    } catch (error) {
      logger.error(`'${this.agent.name}'.handle returned a message that could not be read (a getter threw); it is dropped`, { error });
      return undefined;
    }
    // A reply this.reply() built, still a reply, had its payload checked then; anything else is checked in full.
    const problem = composed && isReply(message) ? undefined : malformation(message);
    if (problem !== undefined) {
      logger.error(`'${this.agent.name}'.handle returned a message to '${message.recipient}' that is not well formed (${problem}); it is dropped. Build messages with this.reply(), or createMessage()`);
      return undefined;
    }
    if (isReply(message)) {
      this.settleReply(message);
      return undefined;
    }
    if (message.recipient === this.agent.name && !this.mailbox.closed && !isReservedType(message.type)) {
      // The loop awaiting this delivery is the only one that could make room: enqueue past a full lane
      // (at most one message per message handled) rather than wait forever.
      forceMessage(this.mailbox, message);
      return undefined;
    }
    return this.deliverQuietly(message);
  }

  /** Delivers a message the agent produced as a result; a failure is logged, not a crash. */
  async deliverQuietly(message: Message, fromRuntime = false): Promise<void> {
    const services = this.requireServices();
    if (!fromRuntime && isReservedType(message.type)) {
      // Application code must never forge runtime control, whatever path it takes.
      services.logger.error(`'${this.agent.name}'.handle returned a '${message.type}' message; reserved types are dropped`, { error: new ReservedMessageTypeError(message.type) });
      return;
    }
    try {
      await services.bus.deliver(message, (this.results ??= new AbortController()).signal);
    } catch (error) {
      services.logger.warn(`'${this.agent.name}' could not deliver its result to '${message.recipient}'`, { error });
    }
  }

  /**
   * Reports an `_agency.*` message the runtime did not mint (a forgery: put
   * into the mailbox, returned from a handler, retried): logged as an error
   * and emitted as `control.forged`; it is never acted on.
   */
  reportForgedControl(message: Message, type: string): void {
    const services = this.requireServices();
    services.logger.error(
      `'${this.agent.name}' dropped a '${type}' message (${describeValue(message.id)} from ${describeValue(message.sender)}) that the runtime did not make: only runtime.suspend/resume and the runtime's supervisors send control, whatever a message's fields say`,
      { error: new ReservedMessageTypeError(type) },
    );
    try {
      services.events.emit("control.forged", this.agent.name, message);
    } catch (error) {
      services.logger.error(`a 'control.forged' listener threw for '${this.agent.name}'`, { error });
    }
  }

  /**
   * Runs a hook with a deadline; its failure or hang is logged, never thrown.
   * `undefined` when the agent does not override it: the base class's hooks
   * do nothing, so there is no call, no deadline timer and nothing to wait for.
   */
  runHook(hook: "onStop" | "onSuspend" | "onResume" | "onDeny" | "onChildTerminated", fn: () => Promise<unknown>, timeoutMs: number): Promise<boolean> | undefined {
    return this.overrides(hook) ? this.runHookWithDeadline(hook, fn, timeoutMs) : undefined;
  }

  /** Resolves `true` when the hook returned in time, `false` when it threw or ran past `timeoutMs` (both logged). */
  async runHookWithDeadline(hook: string, fn: () => Promise<unknown>, timeoutMs: number): Promise<boolean> {
    const services = this.requireServices();
    this.hooksRunning++;
    const run = (async () => fn())()
      .then(
        () => true,
        (error: unknown) => {
          services.logger.error(`'${this.agent.name}'.${hook} threw`, { error });
          return false;
        },
      )
      .finally(() => this.hooksRunning--);
    if (!(await settlesWithin(run, services.clock, timeoutMs))) {
      services.logger.warn(`'${this.agent.name}'.${hook} did not finish within ${timeoutMs} ms; moving on`);
      return false;
    }
    return await run;
  }

  /** Whether the agent's class overrides `hook` of the base class (whose hooks are no-ops). */
  overrides(hook: keyof AgentProcess & string): boolean {
    return (this.agent as unknown as Record<string, unknown>)[hook] !== (rootPrototype(this.agent) as Record<string, unknown>)[hook];
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
  removeFromHost(name: string, remove: (host: DynamicHost) => Promise<void>): Promise<void> {
    const host = this.dynamicHost();
    if (name !== this.agent.name || !this.busyWithOwnCode()) return remove(host);
    remove(host).catch((error: unknown) => this.requireServices().logger.error(`'${name}' could not remove itself`, { error }));
    return RESOLVED;
  }

  /**
   * Whether the agent's own code may be what its loop (or its start, or its
   * stop) is waiting for: a handler or hook runs, the loop is busy, a stop
   * gave up on a handler, or `onStart` runs. Code that waits on the agent's
   * own loop from there would wait for itself. Without an async context per
   * call (too costly on the message path) this cannot tell that code from
   * other code that runs meanwhile, such as one of the agent's timers.
   */
  busyWithOwnCode(): boolean {
    return this.current !== undefined || this.abandoned !== undefined || this.driving || this.hooksRunning > 0 || this.currentStatus === ProcessStatus.INITIALIZING;
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

let agentPrototype: object | undefined;

/** `AgentProcess.prototype`, found once by walking up from an agent (this module imports AgentProcess only as a type). */
function rootPrototype(agent: AgentProcess): object {
  if (agentPrototype !== undefined) return agentPrototype;
  let base: object = Object.getPrototypeOf(agent) as object;
  for (let up = Object.getPrototypeOf(base) as object | null; up !== null && up !== Object.prototype; up = Object.getPrototypeOf(up) as object | null) base = up;
  agentPrototype = base;
  return base;
}

/** Awaited once per wake-up: one settled promise, shared. */
const WAKE: Promise<void> = Promise.resolve();

function removedError(name: string): AgentNotFoundError {
  return new AgentNotFoundError(
    name,
    `'${name}' was removed for good (despawned, stopped, or out of restarts); its state is no longer written, so a late checkpoint (from a handler or hook a stop gave up on) cannot bring back what the removal cleared`,
  );
}

export function notAttached(name: string): RuntimeStateError {
  return new RuntimeStateError("RUNTIME_NOT_STARTED", `agent '${name}' does not belong to a runtime yet; pass it (or its supervisor) to new Runtime({ root })`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
