import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, RestartIntensityError, StartFailedError, StateFencedError } from "../errors/errors.js";
import { assertValidName } from "../bus/registry.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { sleep } from "../time/clock.js";
import { backoffDelay } from "./backoff.js";
import { abandonChildStart, attachChild, closeChild, detachChild, startChild, stopChild, type ChildExit, type ChildParent, type StopOptions, type SupervisedChild } from "../contracts/child.js";
import { RestartIntensity } from "./restart-intensity.js";
import { resolveStrategy, restartSet, type RestartStrategy } from "./restart-strategy.js";
import { resolveRestartOptions, type ResolvedRestartOptions, type RestartOptions } from "./supervision-options.js";

/** Options of a {@link Supervisor}. */
export interface SupervisorOptions extends RestartOptions {
  /** Agents and supervisors, started in this order and stopped in reverse. */
  children: readonly SupervisedChild[];
  /** Which children a crash restarts. @defaultValue "ONE_FOR_ONE" */
  strategy?: RestartStrategy;
}

/**
 * Supervises a fixed list of children the way an Erlang/OTP supervisor does.
 * A crashed child is restarted (after a backoff delay) together with the
 * siblings its strategy names: ONE_FOR_ONE only the child, ONE_FOR_ALL every
 * child, REST_FOR_ONE the child and those started after it. Under
 * ONE_FOR_ONE each child's backoff runs on its own timer, so a crash-looping
 * child never delays a sibling's restart. More than
 * `maxRestarts` restarts within `restartWindowMs` and the supervisor stops
 * all its children and escalates to its parent, which treats it like any
 * crashed child; at the root the runtime stops. A child that exits normally
 * (`ErrorAction.STOP`, `civitas.eval.halt`) is not restarted.
 *
 * @example
 * ```ts
 * const root = new Supervisor("root", {
 *   strategy: "ONE_FOR_ALL",
 *   maxRestarts: 5,
 *   children: [new Fetcher("fetcher"), new Parser("parser")],
 * });
 * ```
 */
export class Supervisor implements SupervisedChild, ChildParent {
  /** The supervisor's name, unique in its runtime. */
  readonly name: string;
  /** Which children a crash restarts. */
  readonly strategy: RestartStrategy;
  private readonly kids: readonly SupervisedChild[];
  private readonly restart: ResolvedRestartOptions;
  private intensity: RestartIntensity;
  private currentStatus = ProcessStatus.INITIALIZING;
  private services: RuntimeServices | undefined;
  private parent: ChildParent | undefined;
  private starts = 0;
  private work: Promise<void> = Promise.resolve();
  private abort = new AbortController();
  private stopping: Promise<void> | undefined;
  /** A stop is coming: no further child is started (see abandonChildStart). */
  private halting = false;
  /** The child being started now (by the supervisor's start or a restart). */
  private startingChild: SupervisedChild | undefined;
  private startup: Promise<void> | undefined;
  private restarts = 0;
  /** ONE_FOR_ONE: the crashed incarnation of each child whose restart backoff is pending. */
  private readonly backoffs = new Map<SupervisedChild, number>();

  /** @throws {@link InvalidArgumentError} for a bad name, strategy, child list or restart setting */
  constructor(name: string, options: SupervisorOptions) {
    assertValidName(name, "supervisor");
    this.name = name;
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `supervisor '${name}' needs an options object with children, got ${describeValue(options)}`);
    }
    this.strategy = resolveStrategy(name, options.strategy);
    if (!Array.isArray(options.children)) {
      throw new InvalidArgumentError("children", `supervisor '${name}': children must be an array of agents and supervisors, got ${describeValue(options.children)}`);
    }
    const kids = [...(options.children as readonly unknown[])];
    const listed = new Set<unknown>();
    kids.forEach((child, index) => {
      if (!isSupervisedChild(child)) {
        throw new InvalidArgumentError("children", `supervisor '${name}': children[${index}] must be an AgentProcess, Supervisor or DynamicSupervisor, got ${describeValue(child)}`);
      }
      if (listed.has(child)) {
        throw new InvalidArgumentError("children", `supervisor '${name}': children[${index}] ('${child.name}') is listed twice; create one instance per child`);
      }
      listed.add(child);
    });
    this.kids = Object.freeze(kids as SupervisedChild[]);
    this.restart = resolveRestartOptions(name, options);
    this.intensity = new RestartIntensity(this.restart.maxRestarts, this.restart.restartWindowMs);
  }

  /** The children, in start order. */
  get children(): readonly SupervisedChild[] {
    return this.kids;
  }

  /** The supervisor's status: INITIALIZING, RUNNING, STOPPING, STOPPED or CRASHED (it gave up). */
  get status(): ProcessStatus {
    return this.currentStatus;
  }

  /** How many times this supervisor has been started. */
  get incarnation(): number {
    return this.starts;
  }

  /** Restarts performed since the runtime started (all incarnations). */
  get restartCount(): number {
    return this.restarts;
  }

  /** Whether it belongs to a runtime (it was passed to one). @internal */
  get attached(): boolean {
    return this.services !== undefined;
  }

  /** @internal */
  [attachChild](parent: ChildParent, services: RuntimeServices): void {
    if (this.services !== undefined) {
      throw new InvalidArgumentError("supervisor", `supervisor '${this.name}' already belongs to a runtime; create a new instance instead`);
    }
    services.registry.registerSupervisor(this);
    this.parent = parent;
    this.services = services;
    // Indexed loops over the frozen child list: for-of over a frozen array allocates per child, even optimized.
    for (let i = 0; i < this.kids.length; i++) (this.kids[i] as SupervisedChild)[attachChild](this, services);
  }

  /** @internal */
  [detachChild](): void {
    for (let i = 0; i < this.kids.length; i++) (this.kids[i] as SupervisedChild)[detachChild]();
    this.services?.registry.release(this.name);
  }

  /** @internal */
  [closeChild](): void {
    for (let i = 0; i < this.kids.length; i++) (this.kids[i] as SupervisedChild)[closeChild]();
  }

  /** @internal */
  [startChild](): Promise<void> {
    const startup = this.startAll();
    this.startup = startup;
    return startup;
  }

  private async startAll(): Promise<void> {
    const services = this.requireServices();
    this.currentStatus = ProcessStatus.INITIALIZING;
    this.starts++;
    this.intensity = new RestartIntensity(this.restart.maxRestarts, this.restart.restartWindowMs);
    this.abort = new AbortController();
    this.backoffs.clear();
    this.stopping = undefined;
    this.halting = false;
    // startUnlessHalting, inlined: one async frame for all the children, not one per child.
    const kids = this.kids;
    for (let i = 0; i < kids.length; i++) {
      if (this.halting) break; // a stop came: the children not started stay so
      const child = kids[i] as SupervisedChild;
      this.startingChild = child;
      try {
        await child[startChild]();
      } catch (error) {
        this.startingChild = undefined;
        services.logger.error(`supervisor '${this.name}' could not start '${child.name}'; stopping the children it started`, { error });
        for (let done = i - 1; done >= 0; done--) await (kids[done] as SupervisedChild)[stopChild]();
        this.currentStatus = ProcessStatus.CRASHED;
        throw error instanceof StartFailedError ? error : new StartFailedError(child.name, { cause: error });
      }
      this.startingChild = undefined;
    }
    this.currentStatus = ProcessStatus.RUNNING;
  }

  /** @internal */
  [stopChild](options: StopOptions = {}): Promise<void> {
    this.stopping ??= this.shutdown(options);
    return this.stopping;
  }

  /**
   * A stop is coming: start no further child (of this start or a restart in
   * flight), and bound the start of the one starting now.
   * @internal
   */
  [abandonChildStart](): void {
    this.halting = true;
    this.startingChild?.[abandonChildStart]();
  }

  /** Starts `child` unless a stop is coming; `false` when it was not started for that reason. */
  private async startUnlessHalting(child: SupervisedChild): Promise<boolean> {
    if (this.halting) return false;
    this.startingChild = child;
    try {
      await child[startChild]();
    } finally {
      this.startingChild = undefined;
    }
    return true;
  }

  /**
   * Exits are handled one at a time, in order, in the supervisor's work
   * queue; the crash time is taken now, when the exit is reported.
   * @internal
   */
  childExited(child: SupervisedChild, exit: ChildExit, incarnation: number): void {
    const crashedAtMs = this.requireServices().clock.now();
    this.enqueue(child, () => this.onChildExit(child, exit, incarnation, crashedAtMs));
  }

  private enqueue(child: SupervisedChild, step: () => Promise<void>): void {
    this.work = this.work.then(step).catch((error: unknown) => {
      this.requireServices().logger.error(`supervisor '${this.name}' failed to handle the exit of '${child.name}'`, { error });
    });
  }

  private async shutdown(options: StopOptions): Promise<void> {
    if (this.currentStatus === ProcessStatus.STOPPED || this.currentStatus === ProcessStatus.INITIALIZING && this.starts === 0) return;
    // Starts in flight (this supervisor's, or a restart's) end first, so no child is started after the tree was
    // stopped: no further child starts, and the one starting gets shutdownTimeoutMs instead of holding the stop forever.
    this[abandonChildStart]();
    await this.startup?.catch(() => undefined);
    this.currentStatus = ProcessStatus.STOPPING;
    this.abort.abort();
    await this.work;
    await this.stopAll(options);
    this.currentStatus = ProcessStatus.STOPPED;
  }

  private async stopAll(options: StopOptions = {}): Promise<void> {
    for (const child of [...this.kids].reverse()) await child[stopChild](options);
  }

  private async onChildExit(child: SupervisedChild, exit: ChildExit, incarnation: number, crashedAtMs: number): Promise<void> {
    const services = this.requireServices();
    // A child can crash while a later sibling is still starting: handle its exit once the start is over.
    if (this.currentStatus === ProcessStatus.INITIALIZING) await this.startup?.catch(() => undefined);
    if (this.currentStatus !== ProcessStatus.RUNNING || child.incarnation !== incarnation || this.backoffs.get(child) === incarnation) return;
    if (exit.kind === "normal") {
      services.logger.info(`'${child.name}' exited normally (${exit.reason}); not restarting it`);
      return;
    }
    // Intensity and backoff count the crash when it happened, not when the queue got to it.
    if (!this.intensity.record(crashedAtMs)) {
      await this.giveUp(exit.error);
      return;
    }
    const delayMs = backoffDelay(this.restart.backoff, this.intensity.count(crashedAtMs), this.restart.backoffBaseMs, this.restart.backoffMaxMs);
    if (this.strategy === "ONE_FOR_ONE") {
      // The backoff runs on the child's own timer, outside the queue, so it never holds up a sibling's restart or an escalation.
      const waitMs = crashedAtMs + delayMs - services.clock.now();
      if (waitMs > 0) this.scheduleRestart(child, exit.error, incarnation, delayMs, waitMs);
      else await this.restartChildren([child], child, exit.error, delayMs);
      return;
    }
    // ONE_FOR_ALL, REST_FOR_ONE: the group is stopped, waits and restarts inside the queue, so group restarts never overlap.
    const set = restartSet(this.strategy, this.kids, child);
    for (const sibling of [...set].reverse()) {
      if (sibling !== child) await sibling[stopChild]();
    }
    if (delayMs > 0) {
      try {
        await sleep(services.clock, delayMs, this.abort.signal);
      } catch {
        return; // the supervisor is stopping
      }
    }
    await this.restartChildren(set, child, exit.error, delayMs);
  }

  /**
   * ONE_FOR_ONE: arms the backoff of `child`'s crashed `incarnation`; when it
   * expires the restart goes back through the queue. A stop or escalation of
   * the supervisor aborts it (and disarms the timer).
   */
  private scheduleRestart(child: SupervisedChild, cause: unknown, incarnation: number, delayMs: number, waitMs: number): void {
    const generation = this.starts;
    const signal = this.abort.signal;
    this.backoffs.set(child, incarnation);
    void sleep(this.requireServices().clock, waitMs, signal).then(
      () => this.enqueue(child, () => this.restartAfterBackoff(child, cause, incarnation, delayMs, generation, signal)),
      () => undefined, // the supervisor is stopping or gave up
    );
  }

  private async restartAfterBackoff(child: SupervisedChild, cause: unknown, incarnation: number, delayMs: number, generation: number, signal: AbortSignal): Promise<void> {
    // Anything that happened during the backoff wins over the restart: a stop or escalation of this
    // supervisor (or a later incarnation of it), or a new incarnation of the child.
    if (signal.aborted || this.starts !== generation || this.currentStatus !== ProcessStatus.RUNNING) return;
    if (this.backoffs.get(child) !== incarnation) return;
    this.backoffs.delete(child);
    if (child.incarnation !== incarnation || isLive(child)) return;
    await this.restartChildren([child], child, cause, delayMs);
  }

  private async restartChildren(set: readonly SupervisedChild[], crashed: SupervisedChild, cause: unknown, delayMs: number): Promise<void> {
    const services = this.requireServices();
    const span = services.telemetry.startSpan("civitas.supervisor.restart", {
      "civitas.supervisor.name": this.name,
      "civitas.supervisor.strategy": this.strategy,
      "civitas.agent.name": crashed.name,
      "civitas.restart.children": set.map((c) => c.name),
      "civitas.restart.delay_ms": delayMs,
    });
    for (const child of set) {
      if (this.currentStatus !== ProcessStatus.RUNNING) break;
      try {
        if (!(await this.startUnlessHalting(child))) break;
        this.restarts++;
        void services.telemetry.audit("agent.restart", child.name, {
          supervisor: this.name,
          strategy: this.strategy,
          crashed: crashed.name,
          incarnation: child.incarnation,
          cause: cause instanceof Error ? cause.message : String(cause),
        });
      } catch (error) {
        if (movedAway(error)) {
          // Another process owns this agent now (a newer fence): it stays stopped here, and its refused
          // start is no crash of this group, so it neither uses up the restart budget nor escalates.
          services.logger.warn(`'${child.name}' is owned by another process (STATE_FENCED); it stays stopped here and is not restarted`);
          continue;
        }
        services.telemetry.endSpan(span, error);
        this.childExited(child, { kind: "crash", error }, child.incarnation);
        return;
      }
    }
    services.telemetry.endSpan(span);
  }

  private async giveUp(cause: unknown): Promise<void> {
    const services = this.requireServices();
    const error = new RestartIntensityError(this.name, this.restart.maxRestarts, this.restart.restartWindowMs, { cause });
    services.logger.error(error.message);
    void services.telemetry.audit("supervisor.escalate", this.name, { maxRestarts: this.restart.maxRestarts, restartWindowMs: this.restart.restartWindowMs });
    this.currentStatus = ProcessStatus.STOPPING;
    this.abort.abort(); // cancels the pending backoffs of ONE_FOR_ONE children
    this.backoffs.clear();
    await this.stopAll();
    this.currentStatus = ProcessStatus.CRASHED;
    this.parent?.childExited(this, { kind: "crash", error }, this.starts);
  }

  private requireServices(): RuntimeServices {
    if (this.services === undefined) {
      throw new InvalidArgumentError("supervisor", `supervisor '${this.name}' does not belong to a runtime yet; pass it to new Runtime({ root })`);
    }
    return this.services;
  }
}

/** Whether a child's start failed because another process took the agent over (`STATE_FENCED`). */
function movedAway(error: unknown): boolean {
  return error instanceof StartFailedError && error.cause instanceof StateFencedError;
}

/** Whether `child` (an agent or supervisor: both expose `status`) is started or still starting or stopping. */
function isLive(child: SupervisedChild): boolean {
  const status = (child as { readonly status?: unknown }).status;
  return status === ProcessStatus.INITIALIZING || status === ProcessStatus.RUNNING || status === ProcessStatus.SUSPENDED || status === ProcessStatus.STOPPING;
}

function isSupervisedChild(value: unknown): value is SupervisedChild {
  if (typeof value !== "object" || value === null) return false;
  const child = value as Partial<SupervisedChild>;
  return typeof child.name === "string" && typeof child[attachChild] === "function" && typeof child[startChild] === "function" && typeof child[stopChild] === "function";
}
