import { describeValue } from "../errors/civitas-error.js";
import {
  DuplicateNameError,
  InvalidArgumentError,
  MaxChildrenError,
  RuntimeStateError,
  StartFailedError,
} from "../errors/errors.js";
import { notFound } from "../bus/message-bus.js";
import { assertValidName } from "../bus/registry.js";
import { AgentProcess, clearSuspension } from "../process/agent-process.js";
import type { CancelCause } from "../process/pause-settlement.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { sleep } from "../time/clock.js";
import { backoffDelay } from "./backoff.js";
import { abandonChildStart, attachChild, checkStopOptions, closeChild, detachChild, startChild, stopChild, type ChildExit, type ChildParent, type StopOptions, type SupervisedChild } from "../contracts/child.js";
import type { AgentFactory, AnyAgentProcess, ChildTerminationReason, DynamicHost, SpawnOptions } from "../process/dynamic-host.js";
import { constructAgent } from "./construct-agent.js";
import { notifySpawner, track, type DynamicChild } from "./dynamic-child.js";
import { RestartIntensity } from "./restart-intensity.js";
import { resolveRestartOptions, type ResolvedRestartOptions, type RestartOptions } from "./supervision-options.js";

/** Options of a {@link DynamicSupervisor}. */
export interface DynamicSupervisorOptions extends RestartOptions {
  /** The most children it holds at once; `spawn` past it rejects with `MAX_CHILDREN`. @defaultValue Infinity */
  maxChildren?: number;
}

/**
 * Supervises agents started at run time. Children are transient: a crashed
 * child is restarted (after a backoff delay) until it exceeds its own restart
 * intensity (`maxRestarts` within `restartWindowMs`, counted per child), then
 * it is removed; a child that exits normally is removed. The agent that
 * spawned a child is told through `onChildTerminated(name, reason)` when the
 * child is gone for good: `"despawned"`, `"restarts_exhausted"` or `"clean_exit"`.
 *
 * @example
 * ```ts
 * const workers = new DynamicSupervisor("workers", { maxChildren: 100 });
 * const runtime = new Runtime({ root: new Supervisor("root", { children: [workers] }) });
 * await runtime.start();
 * await workers.spawn(Worker, "worker-1", { maxRetries: 1 });
 * ```
 */
export class DynamicSupervisor implements SupervisedChild, ChildParent, DynamicHost {
  /** The supervisor's name, unique in its runtime. */
  readonly name: string;
  /** The most children it holds at once. */
  readonly maxChildren: number;
  private readonly restart: ResolvedRestartOptions;
  private readonly kids = new Map<string, DynamicChild>();
  private currentStatus = ProcessStatus.INITIALIZING;
  private services: RuntimeServices | undefined;
  private parent: ChildParent | undefined;
  private starts = 0;
  private abort = new AbortController();
  private pending = new Set<Promise<void>>();
  /** Removals in flight (despawns, stops, exhausted restarts). */
  private readonly removals = new Set<Promise<void>>();
  private stopping: Promise<void> | undefined;

  /** @throws {@link InvalidArgumentError} for a bad name, bound or restart setting */
  constructor(name: string, options: DynamicSupervisorOptions = {}) {
    assertValidName(name, "supervisor");
    this.name = name;
    // Only a missing setting takes the default: an explicit null (a YAML key without a value) is refused.
    const maxChildren = options.maxChildren === undefined ? Number.POSITIVE_INFINITY : options.maxChildren;
    if (!(maxChildren === Number.POSITIVE_INFINITY || (Number.isInteger(maxChildren) && maxChildren >= 1))) {
      throw new InvalidArgumentError("maxChildren", `dynamic supervisor '${name}': maxChildren must be a positive integer, got ${describeValue(maxChildren)}`);
    }
    this.maxChildren = maxChildren;
    this.restart = resolveRestartOptions(name, options);
  }

  /** The live children, in spawn order (a child being despawned is listed until it is gone). */
  get children(): readonly AgentProcess[] {
    return [...this.kids.values()].map((c) => c.agent);
  }

  /** The supervisor's status. */
  get status(): ProcessStatus {
    return this.currentStatus;
  }

  /** How many times this supervisor has been started. */
  get incarnation(): number {
    return this.starts;
  }

  /**
   * Creates, registers and starts an agent. `factory` is an `AgentProcess`
   * subclass or a function `(name, options) => agent`. Resolves with the
   * running agent. Rejects, before creating anything, with `MAX_CHILDREN`,
   * `DUPLICATE_NAME`, `INVALID_ARGUMENT` (also for a class that does not
   * extend `AgentProcess`), `RUNTIME_NOT_STARTED` or `RUNTIME_STOPPED`; with
   * `START_FAILED` (and nothing left registered) when the agent's start fails.
   */
  async spawn<A extends AnyAgentProcess>(factory: AgentFactory<A>, name: string, options?: SpawnOptions, spawner?: string): Promise<A> {
    const services = this.requireRunning();
    assertValidName(name, "agent");
    if (typeof factory !== "function") {
      throw new InvalidArgumentError("factory", `spawn('${name}') needs an AgentProcess subclass or a factory function, got ${describeValue(factory)}`);
    }
    if (this.kids.size >= this.maxChildren) throw new MaxChildrenError(this.name, this.maxChildren);
    if (services.registry.has(name)) {
      throw new DuplicateNameError(name, `cannot spawn '${name}': the name is already used in this runtime; pick another name or despawn the existing agent first`);
    }
    const agent = constructAgent(factory, name, options);
    if (!(agent instanceof AgentProcess) || agent.name !== name) {
      throw new InvalidArgumentError("factory", `spawn('${name}'): the factory must return an AgentProcess named '${name}', got ${describeValue(agent)}`);
    }
    agent[attachChild](this, services);
    this.kids.set(name, { agent, spawner: spawner === undefined ? undefined : services.registry.get(spawner), intensity: new RestartIntensity(this.restart.maxRestarts, this.restart.restartWindowMs) });
    try {
      await agent[startChild]();
    } catch (error) {
      this.kids.delete(name);
      agent[closeChild]();
      agent[detachChild]();
      throw error instanceof StartFailedError ? error : new StartFailedError(name, { cause: error });
    }
    return agent;
  }

  /**
   * Stops a child (finishing its current message) and removes it; its spawner
   * is told `"despawned"`, once. A pending restart of the child is cancelled.
   * Despawning a child already being removed waits for that removal.
   */
  async despawn(name: string): Promise<void> {
    await this.removeByName(name, { drain: "current" }, "despawned");
  }

  /**
   * Gracefully stops a child and removes it: `drain: "all"` first handles
   * every business message queued when the stop begins; `timeoutMs` bounds
   * the drain, and separately `onStop`. What is still queued then is
   * dropped, and asks among it fail with `MAILBOX_CLOSED`. Its spawner
   * is told `"despawned"`, once. From the call on, the child is never
   * restarted (a pending restart backoff is cancelled). Stopping a child
   * already being removed waits for that removal. Rejects with
   * `AGENT_NOT_FOUND` for an unknown child.
   */
  async stop(name: string, options: StopOptions = {}): Promise<void> {
    await this.removeByName(name, options, "stopped");
  }

  /** Stops and removes the child `name`; a pause it holds is cancelled with `cause`. */
  private async removeByName(name: string, options: StopOptions, cause: "despawned" | "stopped"): Promise<void> {
    checkStopOptions(name, options);
    const child = this.kids.get(name);
    if (child === undefined) throw notFound(name);
    await this.remove(child, "despawned", () => child.agent[stopChild](options), cause);
  }

  /** Whether it belongs to a runtime (it was passed to one). @internal */
  get attached(): boolean {
    return this.services !== undefined;
  }

  /** @internal */
  [attachChild](parent: ChildParent, services: RuntimeServices): void {
    if (this.services !== undefined) {
      throw new InvalidArgumentError("supervisor", `dynamic supervisor '${this.name}' already belongs to a runtime; create a new instance instead`);
    }
    services.registry.registerSupervisor(this);
    this.parent = parent;
    this.services = services;
  }

  /** @internal */
  [detachChild](): void {
    for (const child of this.kids.values()) child.agent[detachChild]();
    this.services?.registry.release(this.name);
  }

  /** @internal */
  [closeChild](): void {
    for (const child of this.kids.values()) child.agent[closeChild]();
  }

  /**
   * Nothing to do from a parent: a dynamic supervisor starts empty, and the
   * starts of its children (spawns, restarts) are bounded by its own stop.
   * @internal
   */
  [abandonChildStart](): void {}

  /** @internal */
  async [startChild](): Promise<void> {
    this.requireServices();
    for (const child of [...this.kids.values()]) this.forget(child);
    this.starts++;
    this.abort = new AbortController();
    this.stopping = undefined;
    this.currentStatus = ProcessStatus.RUNNING;
  }

  /** @internal */
  [stopChild](options: StopOptions = {}): Promise<void> {
    this.stopping ??= this.shutdown(options);
    return this.stopping;
  }

  /** @internal */
  childExited(child: SupervisedChild, exit: ChildExit, incarnation: number): void {
    const entry = this.kids.get(child.name);
    if (entry === undefined || entry.agent !== child || entry.removal !== undefined || child.incarnation !== incarnation) return;
    const work = this.onChildExit(entry, exit).catch((error: unknown) => {
      this.requireServices().logger.error(`dynamic supervisor '${this.name}' failed to handle the exit of '${child.name}'`, { error });
    });
    track(this.pending, work);
  }

  private async onChildExit(child: DynamicChild, exit: ChildExit): Promise<void> {
    const services = this.requireServices();
    if (this.currentStatus !== ProcessStatus.RUNNING || child.removal !== undefined) return;
    if (exit.kind === "normal") {
      await this.remove(child, "clean_exit");
      return;
    }
    const now = services.clock.now();
    if (!child.intensity.record(now)) {
      services.logger.error(`'${child.agent.name}' exceeded ${this.restart.maxRestarts} restarts within ${this.restart.restartWindowMs} ms; removing it`);
      await this.remove(child, "restarts_exhausted");
      return;
    }
    const delayMs = backoffDelay(this.restart.backoff, child.intensity.count(now), this.restart.backoffBaseMs, this.restart.backoffMaxMs);
    if (delayMs > 0) {
      const backoff = new AbortController();
      const cancel = (): void => backoff.abort();
      const supervisorStop = this.abort.signal;
      supervisorStop.addEventListener("abort", cancel, { once: true });
      child.backoff = backoff;
      try {
        await sleep(services.clock, delayMs, backoff.signal);
      } catch {
        return;
      } finally {
        supervisorStop.removeEventListener("abort", cancel);
        if (child.backoff === backoff) delete child.backoff;
      }
    }
    // A despawn (or a stop of this supervisor) that began during the backoff wins over the restart.
    if (!this.isCurrent(child)) return;
    const span = services.telemetry.startSpan("civitas.supervisor.restart", {
      "civitas.supervisor.name": this.name,
      "civitas.agent.name": child.agent.name,
      "civitas.restart.delay_ms": delayMs,
    });
    try {
      await child.agent[startChild]();
      services.telemetry.endSpan(span);
      if (!this.isCurrent(child)) {
        // A despawn or stop asked for while it was starting stops it itself, as it was asked (its drain):
        // a stop from here would race it with the default drain and could win.
        if (child.removal !== undefined) return;
        // Stopped with this supervisor while it was starting: nobody would ever stop it again, so stop it now.
        await child.agent[stopChild]();
        if (this.kids.get(child.agent.name) !== child) child.agent[closeChild]();
        return;
      }
      void services.telemetry.audit("agent.restart", child.agent.name, {
        supervisor: this.name,
        incarnation: child.agent.incarnation,
        cause: exit.error instanceof Error ? exit.error.message : String(exit.error),
      });
    } catch (error) {
      services.telemetry.endSpan(span, error);
      await this.onChildExit(child, { kind: "crash", error });
    }
  }

  private async shutdown(options: StopOptions): Promise<void> {
    if (this.currentStatus !== ProcessStatus.RUNNING) return;
    this.currentStatus = ProcessStatus.STOPPING;
    this.abort.abort();
    // A child in its onStart (a spawn, or a restart awaited below) is asked to stop now: its onStart gets
    // shutdownTimeoutMs, and a stop asked for later (DynamicSupervisor.stop) joins this one instead of coming first.
    const asked = new Map<DynamicChild, Promise<void>>();
    for (const child of this.kids.values()) {
      if (child.agent.status !== ProcessStatus.INITIALIZING) continue;
      const stop = child.agent[stopChild](options);
      stop.catch(() => undefined); // awaited below, unless a removal took the child first
      asked.set(child, stop);
    }
    await Promise.all(this.pending);
    for (const child of [...this.kids.values()].reverse()) await (asked.get(child) ?? child.agent[stopChild](options));
    // Despawns and stops in flight (also ones a child began while being stopped) finish their work,
    // clearing the child's marker and telling its spawner, before this stop resolves.
    while (this.removals.size > 0) await Promise.allSettled([...this.removals]);
    this.currentStatus = ProcessStatus.STOPPED;
  }

  /** Whether `child` is still held, not being removed, and may run: the supervisor runs. */
  private isCurrent(child: DynamicChild): boolean {
    return this.currentStatus === ProcessStatus.RUNNING && this.kids.get(child.agent.name) === child && child.removal === undefined;
  }

  /**
   * Removes a child for good (after `stopFirst`, when given; a pause it
   * holds is cancelled with `cause`) and tells its spawner why. The child is marked as being
   * removed before anything is awaited, so no restart can slip in between;
   * a second call while the removal runs joins it, so the spawner hears once.
   */
  private remove(child: DynamicChild, reason: ChildTerminationReason, stopFirst?: () => Promise<void>, cause: CancelCause = reason): Promise<void> {
    if (this.kids.get(child.agent.name) !== child) return Promise.resolve();
    if (child.removal !== undefined) return child.removal;
    // The mark is set before removeNow runs a single line.
    const removal = Promise.resolve().then(() => this.removeNow(child, reason, stopFirst, cause));
    child.removal = removal;
    child.backoff?.abort();
    track(this.removals, removal);
    return removal;
  }

  private async removeNow(child: DynamicChild, reason: ChildTerminationReason, stopFirst: (() => Promise<void>) | undefined, cause: CancelCause): Promise<void> {
    if (stopFirst !== undefined) {
      try {
        await stopFirst();
      } catch (error) {
        // The stop failed: the child stays, as if the removal had not been asked for.
        delete child.removal;
        throw error;
      }
    }
    try {
      // A pause the child holds is cancelled on the record (agent.suspend.cancelled), by this supervisor.
      await child.agent[clearSuspension](cause, this.name);
    } catch (error) {
      this.requireServices().logger.error(`could not clear the suspension marker of removed agent '${child.agent.name}'; a new agent of that name would start SUSPENDED`, { error });
    }
    if (this.kids.get(child.agent.name) !== child) return;
    this.forget(child);
    this.requireServices().logger.info(`'${child.agent.name}' removed from '${this.name}' (${reason})`);
    notifySpawner(child, reason, this.name, this.requireServices());
  }

  private forget(child: DynamicChild): void {
    this.kids.delete(child.agent.name);
    child.agent[closeChild]();
    child.agent[detachChild]();
  }

  private requireRunning(): RuntimeServices {
    const services = this.requireServices();
    if (this.currentStatus !== ProcessStatus.RUNNING) {
      throw new RuntimeStateError(
        this.currentStatus === ProcessStatus.INITIALIZING ? "RUNTIME_NOT_STARTED" : "RUNTIME_STOPPED",
        `dynamic supervisor '${this.name}' is ${this.currentStatus}; spawn only while it runs (after runtime.start())`,
      );
    }
    return services;
  }

  private requireServices(): RuntimeServices {
    if (this.services === undefined) {
      throw new RuntimeStateError("RUNTIME_NOT_STARTED", `dynamic supervisor '${this.name}' does not belong to a runtime yet; pass it to new Runtime({ root })`);
    }
    return this.services;
  }
}
