import type { Span } from "@opentelemetry/api";
import { AgentNotFoundError, IllegalTransitionError, InvalidArgumentError, MailboxClosedError, NoDynamicSupervisorError, RuntimeStateError, type StateFencedError } from "../errors/errors.js";
import { type Message } from "../message/message.js";
import { queuedBusiness } from "../mailbox/mailbox-internals.js";
import { Mailbox, type MailboxConsumer } from "../mailbox/mailbox.js";
import type { MailboxOptions } from "../mailbox/mailbox-options.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import type { ChildParent, StopOptions } from "../contracts/child.js";
import { isDynamicHost } from "./dynamic-host.js";
import { systemClock, type Clock } from "../time/clock.js";
import { type ResolvedAgentOptions } from "./agent-options.js";
import { type EnvelopeContext } from "./envelope.js";
import { persistableState } from "../state/suspension-marker.js";
import { STORED } from "../state/in-memory-state-store.js";
import { anchoredState } from "../audit/audit-anchor.js";
import { afterFailedPersist } from "./fencing.js";
import { isLegalTransition, ProcessStatus } from "../contracts/process-status.js";
import type { AgentProcess } from "./agent-process.js";
import { SuspensionControl } from "./suspension-control.js";
import { IDLE, isLegalPhase, StartAttempt, UP, type Phase } from "./lifecycle.js";
import { start } from "./start-sequence.js";
import { requestStop } from "./stop-sequence.js";
import { run } from "./message-loop.js";
import { refuse } from "./effects.js";
import { ApprovalGate } from "./approval-gate.js";
import { APPROVALS_KEY, approvalsJson } from "../approvals/stored-approvals.js";
import type { JsonObject } from "../message/json.js";
import { ReservedStateKeyError } from "../errors/backlog-errors.js";
import { BACKLOG_KEY, DurableBacklog } from "./durable-backlog.js";

/**
 * The machinery behind one {@link AgentProcess}: its lifecycle, message loop,
 * mailbox, suspension and links to the runtime. Kept apart so that an agent
 * subclass's own fields and methods can never collide with the runtime's.
 * @internal
 */
export class ProcessRunner implements MailboxConsumer, EnvelopeContext {
  /** The public status: a scalar mirror of the phase's, written only by {@link ProcessRunner.enter}. */
  currentStatus = ProcessStatus.INITIALIZING;
  /** Which lifecycle phase the agent is in, with that phase's data (lifecycle.ts); written only by {@link ProcessRunner.enter}. */
  phase: Phase = IDLE;
  services: RuntimeServices | undefined;
  parent: ChildParent | undefined;
  box: Mailbox | undefined;
  initialState: string | undefined;
  /** Bumped by every start and by a stop that gives up on its loop: a loop (or handler) of an older one can no longer act. */
  generation = 0;
  starts = 0;
  /** The message loop runs now (begun by {@link ProcessRunner.wake}, not parked): never two loops. */
  driving = false;
  /** The loop begun last; it spans the `up` and `stopping` phases of one incarnation. */
  loopDone: Promise<void> | undefined;
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
  /** Removed from its runtime for good (its suspension cleared): nothing of it is written any more. */
  removed = false;
  /** An `onStart` a stop gave up on that has not returned yet: the next start's `onStart` waits for it. */
  abandonedOnStart: Promise<void> | undefined;
  /** Hooks (`onStop`, `onSuspend`, `onResume`, `onChildTerminated`) running now, including ones past their deadline. */
  hooksRunning = 0;
  /** Why this incarnation's state could not be restored: persists are refused with it, so the stored record survives. */
  unrestored: unknown;
  /** Set when a persist was refused with `STATE_FENCED`: another process owns the agent now; see `afterFailedPersist`. */
  fencedOut: StateFencedError | undefined;
  /** Its record was claimed for this runtime's fence (takeover-claim.ts); once per runtime. */
  claimed = false;

  /** The approval gate and held actions; `undefined` for an agent with no policy that never held a message. */
  gate: ApprovalGate | undefined;

  /**
   * The durable backlog of a paused agent (durable-backlog.ts); `undefined`
   * when the agent has none (`durableBacklog: false`, or a store that is not durable).
   */
  backlog: DurableBacklog | undefined;

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
    if (this.options.durableBacklog ?? services.durableBacklog ?? services.store.durable) this.backlog = new DurableBacklog(this);
    this.box = this.newMailbox();
    const policy = this.options.approvalPolicy === undefined ? services.approvalPolicy : this.options.approvalPolicy;
    if (policy !== undefined && policy !== null) this.gate = new ApprovalGate(this, policy);
  }

  newMailbox(): Mailbox {
    const box = new Mailbox(mailboxOptions(this.requireServices(), this.options));
    // A new mailbox holds none of the old one's messages: the next start reads the backlog from the store again.
    this.backlog?.clear();
    box.keeper = this.backlog;
    return box;
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
      refuse(this, request, new MailboxClosedError(`'${this.agent.name}' stopped for good before it handled ${request.type} ${request.id}`));
    }
  }

  /**
   * Bounds a start in flight because a stop is coming: its `onStart` gets
   * `shutdownTimeoutMs` (also when it has not begun yet), and no loop starts
   * after it, so the stop takes nothing queued.
   * @internal
   */
  abandonStart(): void {
    const phase = this.phase;
    if (phase.kind !== "starting" || this.currentStatus !== ProcessStatus.INITIALIZING) return;
    phase.attempt.stopAsked = true;
    phase.attempt.abandon?.();
  }

  /** @internal */
  startChild(): Promise<void> {
    const starting = this.startInFlight();
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
    const attempt = new StartAttempt();
    attempt.done = start(this, attempt);
    return attempt.done;
  }

  /** The start in flight, if any: the `starting` phase's, or that of an incarnation a stop ended while it announced a restored pause. */
  startInFlight(): Promise<void> | undefined {
    const phase = this.phase;
    const attempt = phase.kind === "starting" ? phase.attempt : phase.kind === "stopping" || phase.kind === "down" ? phase.unfinished : undefined;
    return attempt === undefined || attempt.over ? undefined : attempt.done;
  }

  /** @internal */
  async stopChild(options: StopOptions = {}): Promise<void> {
    for (;;) {
      const phase = this.phase;
      switch (phase.kind) {
        case "starting":
          if (this.currentStatus === ProcessStatus.INITIALIZING) {
            // Stopped while starting (also before onStart began): onStart gets shutdownTimeoutMs, as when the runtime
            // stops, and no loop begins; once the start is past onStart (the rest, such as announcing a restored
            // pause, goes on in the background), it is stopped as usual.
            this.abandonStart();
            await Promise.race([phase.attempt.done.catch(() => undefined), phase.attempt.initialized]);
            continue;
          }
          return requestStop(this, options);
        case "up":
          return requestStop(this, options);
        case "stopping":
          // Another stop, its own end, a crash or a failed start is ending it: this stop joins that end.
          return phase.done;
        default:
          return; // never started, or over
      }
    }
  }

  // ---- lifecycle ---------------------------------------------------------

  /** Called by the mailbox when a message lands that the parked loop may take: see {@link ProcessRunner.wake}. */
  mailboxReady(): void {
    this.wake();
  }

  /**
   * The one way the message loop begins (called by the mailbox, by a start
   * once it is over, by a stop, by a suspend request or a pause's deadline
   * an idle agent must see). Begins it unless it runs already (`driving`:
   * never two loops), or the agent is neither `up` (RUNNING or SUSPENDED,
   * its start over) nor STOPPING: during a start the loop waits for it to be
   * over, and after a start a stop came during, only that stop begins it,
   * so nothing queued slips in first.
   */
  wake(): void {
    if (this.driving) return;
    if (this.currentStatus !== ProcessStatus.STOPPING && this.phase !== UP) return;
    this.box?.unpark();
    this.driving = true;
    this.loopDone = run(this, this.generation);
  }

  // ---- helpers -----------------------------------------------------------

  /**
   * The single path every persist takes. With a durable backlog, writes go
   * one at a time (see {@link DurableBacklog.serial}); a write waiting its
   * turn stores the state as it is when its turn comes.
   */
  persist(): Promise<void> {
    const backlog = this.backlog;
    return backlog === undefined ? this.write() : backlog.serial(() => this.write());
  }

  /**
   * Writes the agent's record now: its `state` with the runtime's keys, or,
   * given `base` (the record the store holds), that record with only the
   * durable backlog brought up to date.
   */
  write(base?: JsonObject): Promise<void> {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the restore's own error, a CivitasError
    if (this.unrestored !== undefined) return Promise.reject(this.unrestored);
    if (this.removed) return Promise.reject(removedError(this.agent.name));
    if (this.fencedOut !== undefined) return Promise.reject(this.fencedOut);
    try {
      const backlog = this.backlog;
      let state: JsonObject;
      if (base === undefined) {
        state = this.recordOf(); // checks that state is a plain JSON object first
        if (BACKLOG_KEY in state) throw new ReservedStateKeyError(this.agent.name, BACKLOG_KEY);
      } else {
        state = { ...base };
      }
      if (backlog !== undefined && backlog.size > 0) state[BACKLOG_KEY] = backlog.json();
      else if (BACKLOG_KEY in state) delete state[BACKLOG_KEY]; // a delete is a runtime call even for an absent key
      const services = this.requireServices();
      const written = services.store.set(this.agent.name, state);
      // The in-memory store's one settled promise: the write is done, no failure to watch for.
      if (backlog === undefined) return written === STORED ? written : written.catch((error: unknown) => afterFailedPersist(this, error));
      const mark = backlog.mark;
      return written.then(
        () => backlog.wrote(mark),
        (error: unknown) => afterFailedPersist(this, error),
      );
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a store (or the state check) threw synchronously: reject like an async store would
      return Promise.reject(error);
    }
  }

  /** The record to store: `state` with the runtime's marker, held actions and audit anchor. */
  private recordOf(): JsonObject {
    const marker = this.suspension.marker;
    // A pause asked for and not entered yet, or entered and not announced yet, is stored flagged as not announced (see SuspensionMarker.announced).
    // A decided pause is never written back, whatever failed before its decision (issue 21).
    const asked = marker ?? this.suspension.request?.marker;
    const pause = asked === undefined || this.suspension.wasSettled(asked) ? undefined : asked;
    const state = persistableState(this.agent.state, pause, this.agent.name, marker !== undefined && !this.suspension.announcementOwed);
    // The held actions are the runtime's, as the marker is: what user code put under their key is never written.
    if (this.gate !== undefined && this.gate.records.size > 0) state[APPROVALS_KEY] = approvalsJson(this.gate.records.values(), this.gate.receipts);
    else if (APPROVALS_KEY in state) delete state[APPROVALS_KEY];
    // A pause, and every write after the agent's first pause or settlement, records where the audit chain stood.
    const anchor = pause !== undefined || this.suspension.lastSettled !== undefined ? this.requireServices().telemetry.anchorFor(this.agent.name) : undefined;
    return anchoredState(state, anchor);
  }

  /** A status change within the current phase (RUNNING ⇄ SUSPENDED, INITIALIZING → RUNNING, STOPPING → STOPPED). */
  transition(to: ProcessStatus): void {
    this.enter(this.phase, to);
  }

  /**
   * The one writer of the phase and of the public status: enters `next`
   * showing `to`, both checked (lifecycle.ts' phase table, process-status.ts'
   * status table), and emits `agent.status` when the status changes.
   * @throws {@link IllegalTransitionError} (`ILLEGAL_TRANSITION`) for a change either table refuses
   */
  enter(next: Phase, to: ProcessStatus): void {
    const from = this.currentStatus;
    const phase = this.phase;
    // The same status is legal only with a phase change (idle -> starting, or a start handing over to `up`).
    if (from === to ? next === phase : !isLegalTransition(from, to)) throw new IllegalTransitionError(this.agent.name, from, to);
    if (!isLegalPhase(phase, next, to)) throw new IllegalTransitionError(this.agent.name, `${from} (${phase.kind})`, `${to} (${next.kind})`);
    this.phase = next;
    if (from === to) return;
    this.currentStatus = to;
    try {
      this.services?.events.emit("agent.status", this.agent.name, from, to);
    } catch (error) {
      // A listener's bug must not stop the transition halfway (a RUNNING agent without its loop).
      this.services?.logger.error(`an 'agent.status' listener threw for '${this.agent.name}' (${from} -> ${to})`, { error });
    }
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
 * Per runtime, the options of the mailbox made last: agents with the same
 * options (most take the defaults) share them, instead of one object each.
 */
const mailboxOptionsMade = new WeakMap<RuntimeServices, { readonly agent: ResolvedAgentOptions; readonly options: MailboxOptions }>();

function mailboxOptions(services: RuntimeServices, agent: ResolvedAgentOptions): MailboxOptions {
  const made = mailboxOptionsMade.get(services);
  if (made?.agent === agent) return made.options;
  const options: MailboxOptions = Object.freeze({
    capacity: agent.mailboxSize,
    priorityCapacity: agent.priorityMailboxSize,
    clock: services.clock,
    onExpired: services.expired,
    onPutWait: services.putWait,
  });
  mailboxOptionsMade.set(services, { agent, options });
  return options;
}

export function removedError(name: string): AgentNotFoundError {
  return new AgentNotFoundError(
    name,
    `'${name}' was removed for good (despawned, stopped, or out of restarts); its state is no longer written, so a late checkpoint (from a handler or hook a stop gave up on) cannot bring back what the removal cleared`,
  );
}

export function notAttached(name: string): RuntimeStateError {
  return new RuntimeStateError("RUNTIME_NOT_STARTED", `agent '${name}' does not belong to a runtime yet; pass it (or its supervisor) to new Runtime({ root })`);
}
