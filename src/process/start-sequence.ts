import type { Span } from "@opentelemetry/api";
import { RuntimeStateError, StartFailedError, type StateFencedError } from "../errors/errors.js";
import { assertJsonObject, isJsonObject, type JsonObject } from "../message/json.js";
import { AbandonableWait, settlesWithin } from "../time/deadline.js";
import { whenAborted } from "../time/when-aborted.js";
import { checkStoredState } from "../state/state-record.js";
import { isMarkerJson, readMarker, SUSPENSION_KEY } from "../state/suspension-marker.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { ProcessRunner } from "./process-runner.js";
import { UP, type StartAttempt, type Starting, type Stopping } from "./lifecycle.js";
import { receiptRecorded, runHook, errorText, overrides } from "./hooks.js";
import { restoreApprovals } from "./approval-release.js";
import { rollForward } from "./recorded-decision.js";
import { claimOnFirstStart } from "./takeover-claim.js";
import { restoreBacklog } from "./backlog-restore.js";

const EMPTY_OBJECT = "{}";

/**
 * One start of the agent, straight through its `starting` phase: restore
 * the state, `onStart` (bounded once a stop comes), then RUNNING or
 * SUSPENDED, a restored pause's announcement, and `up` — unless a stop came
 * meanwhile, which then ends the incarnation. A failed start runs `onStop`
 * and ends CRASHED.
 */
export async function start(r: ProcessRunner, attempt: StartAttempt): Promise<void> {
  // `over` is set as the start ends, however it ends: `done` settles right after.
  try {
    const services = r.requireServices();
    const starting: Starting = { kind: "starting", attempt };
    r.enter(starting, ProcessStatus.INITIALIZING);
    if (r.box?.closed === true) r.box = r.newMailbox(); // restarted after it stopped for good
    r.generation++;
    r.results = undefined;
    r.starts++;
    // Resumes numbered up to this were queued before a restart: not meant for a pause it restores unannounced.
    const startedAfter = r.starts > 1 ? services.controlSent.count : undefined;
    r.driving = false;
    const telemetry = services.telemetry;
    const span = telemetry.tracing ? telemetry.startSpan("civitas.agent.start", { "civitas.agent.name": r.agent.name, "civitas.agent.incarnation": r.starts }) : undefined;
    let restored = false;
    let settledInStore = false;
    r.unrestored = undefined;
    try {
      // Fenced out (another process owns it): never started again in this process.
      if (r.fencedOut !== undefined) throw r.fencedOut;
      if (r.initialState === undefined) r.initialState = initialStateOf(r);
      // On a fenced store: the takeover's receipt, then the claim, before anything is read.
      const claim = claimOnFirstStart(r);
      if (claim !== undefined) await claim;
      settledInStore = restore(r, await services.store.get(r.agent.name));
      restored = true;
      // The base class's onStart does nothing: no call, and nothing to wait for or bound.
      if (r.abandonedOnStart !== undefined || overrides(r, "onStart")) await runOnStart(r, attempt);
      const fenced = r.fencedOut as StateFencedError | undefined; // set meanwhile when onStart's checkpoint found the agent owned elsewhere
      if (fenced !== undefined) throw fenced;
    } catch (error) {
      throw await crashedStart(r, attempt, error, span, restored);
    }
    r.transition(r.suspension.marker === undefined ? ProcessStatus.RUNNING : ProcessStatus.SUSPENDED);
    attempt.markInitialized();
    services.telemetry.endSpan(span);
    // Without a sink there is no receipt to write or wait for (and no details to build).
    const startRecorded = telemetry.auditing
      ? telemetry.audit("agent.start", r.agent.name, r.suspension.marker === undefined ? { incarnation: r.starts } : { incarnation: r.starts, suspensionId: r.suspension.marker.suspensionId })
      : undefined;
    if (r.suspension.marker !== undefined || settledInStore) await settleRestoredPause(r, startedAfter, settledInStore);
    // A stop that came meanwhile (this agent's, or the runtime's) has begun, or will begin, the loop itself.
    if (services.stopping.aborted) attempt.stopAsked = true;
    if (r.phase === starting && !attempt.stopAsked) {
      r.enter(UP, r.currentStatus);
      r.wake();
    }
    // runtime.start() resolves once this receipt is recorded: a kill right after leaves it in the log. Not awaited
    // here: a crash while it is being written must find this start over, so its restart can begin.
    if (startRecorded !== undefined) telemetry.track(receiptRecorded(r, "agent.start", startRecorded));
  } finally {
    attempt.over = true;
  }
}

/** The initial state as JSON, checked: what every start without a stored record begins from. */
function initialStateOf(r: ProcessRunner): string {
  const state = r.agent.state;
  if (!isJsonObject(state)) assertJsonObject(state, `initial state of '${r.agent.name}'`); // the label only for the error
  // Most agents start from {}: they share one string, and need no JSON.stringify.
  for (const key in state) if (Object.hasOwn(state, key)) return JSON.stringify(state);
  return EMPTY_OBJECT;
}

/**
 * Restores `state`, the pause, the durable backlog and the held actions
 * from the record the store handed back (`undefined`: none). Returns
 * whether the store still holds a pause this agent had settled.
 */
function restore(r: ProcessRunner, fetched: JsonObject | undefined): boolean {
  // A custom store may hand back what no agent can run on (Infinity, a Date): STATE_SCHEMA, as for a bad record.
  const stored = fetched === undefined ? undefined : checkStoredState(r.agent.name, fetched);
  // The same instance restarting knows its pause at least as well as the store does,
  // and a pause it resumed from stays settled even where the store still holds it.
  const storedMarker = stored === undefined ? undefined : readMarker(r.agent.name, stored);
  const settledInStore = storedMarker !== undefined && storedMarker.suspensionId === r.suspension.lastSettled;
  r.suspension.marker ??= settledInStore ? undefined : storedMarker;
  r.agent.state = (stored ?? JSON.parse(r.initialState ?? EMPTY_OBJECT)) as JsonObject;
  // Before the held actions: their restore takes their key out of the same object, and the backlog keeps the whole record read.
  restoreBacklog(r, stored);
  restoreApprovals(r, stored);
  const kept = r.suspension.marker !== undefined && r.suspension.marker === storedMarker ? stored?.[SUSPENSION_KEY] : undefined;
  r.suspension.setMarker(r.suspension.marker, isMarkerJson(kept) ? (kept as JsonObject) : undefined);
  r.suspension.restoredPause = r.suspension.marker?.suspensionId;
  return settledInStore;
}

/**
 * Runs `onStart` (after the one a stop gave up on, if any, has returned or
 * had `shutdownTimeoutMs` more), bounded once a stop comes.
 * @throws what `onStart` threw, or an error when a stop gave up on it
 */
async function runOnStart(r: ProcessRunner, attempt: StartAttempt): Promise<void> {
  // An onStart a stop gave up on gets up to shutdownTimeoutMs more to return before the next one begins.
  const previous = r.abandonedOnStart;
  const onStart = previous === undefined ? callOnStart(r) : afterAbandonedOnStart(r, previous);
  if (!(await settlesUnlessStopped(r, attempt, onStart))) {
    const abandoned = onStart.catch(() => undefined);
    r.abandonedOnStart = abandoned;
    void abandoned.then(() => {
      if (r.abandonedOnStart === abandoned) r.abandonedOnStart = undefined;
    });
    if (r.requireServices().stopping.aborted) {
      throw new RuntimeStateError("RUNTIME_STOPPED", `the runtime stopped while '${r.agent.name}'.onStart was running, and it did not finish within ${r.options.shutdownTimeoutMs} ms; the start is abandoned`);
    }
    throw new Error(`'${r.agent.name}' was stopped while its onStart was running, and onStart did not finish within ${r.options.shutdownTimeoutMs} ms; the start is abandoned`);
  }
  await onStart;
}

/**
 * Ends a start that failed with `error`: CRASHED, its `agent.crash`
 * receipt, `onStop`. Returns the error the start fails with.
 */
async function crashedStart(r: ProcessRunner, attempt: StartAttempt, error: unknown, span: Span | undefined, restored: boolean): Promise<StartFailedError> {
  const services = r.requireServices();
  const exit = { kind: "crash", error } as const;
  let stopReturned!: () => void;
  // A stop meanwhile joins this start's onStop (not its receipt).
  const done = new Promise<void>((resolve) => (stopReturned = resolve));
  const ending: Stopping = { kind: "stopping", exit, plan: undefined, done, crashRecorded: undefined, unfinished: attempt };
  r.enter(ending, ProcessStatus.CRASHED);
  r.suspension.deadline?.cancel();
  attempt.markInitialized();
  services.telemetry.endSpan(span, error);
  // The crash's receipt is durable before the supervisor hears of the failure (and restarts).
  ending.crashRecorded = services.telemetry.audit("agent.crash", r.agent.name, { phase: "start", error: errorText(error) });
  // onStop still runs, but a checkpoint from it must not overwrite the record that could not be read
  // (STATE_SCHEMA) with the initial state: persists fail with the restore's error until the next start.
  if (!restored) r.unrestored = error;
  const stopSpan = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": r.agent.name });
  await runHook(r, "onStop", () => r.agent.onStop(), r.options.shutdownTimeoutMs);
  stopReturned();
  services.telemetry.endSpan(stopSpan);
  await receiptRecorded(r, "agent.crash", ending.crashRecorded);
  if (r.phase === ending) r.enter({ kind: "down", exit, unfinished: attempt }, ProcessStatus.CRASHED);
  return new StartFailedError(r.agent.name, { cause: error });
}

/**
 * After a start restored a pause (or found one it had settled still
 * stored): completes a decision on record, announces a pause not announced
 * yet, or writes the settled one cleared; then writes what was sent while
 * it started to the backlog of a pause it stays in.
 */
async function settleRestoredPause(r: ProcessRunner, startedAfter: number | undefined, settledInStore: boolean): Promise<void> {
  // A restored pause whose decision is on record (the process ended between its receipt and its cleared marker) is completed now,
  // before anything (its announcement included) could write its marker again.
  await rollForward(r.suspension);
  // A pause stored before it was announced (a crash or stop came first) gets its receipt and onSuspend now, before any message.
  if (r.suspension.marker?.announced === false) await r.suspension.announceRestored(startedAfter);
  // The store still holds a pause this agent resumed from (that resume's write failed): write it cleared now.
  else if (settledInStore && r.suspension.marker === undefined) await r.suspension.persistMarker("resume", undefined);
  // Restored into a pause (and still in it): what was sent while it started joins the backlog (written now; its sends resolved already).
  if (r.currentStatus === ProcessStatus.SUSPENDED && r.suspension.marker !== undefined && r.backlog?.adoptQueued() === true) {
    const services = r.requireServices();
    await r.persist().catch((error: unknown) => services.logger.warn(`'${r.agent.name}' could not write the messages sent while it started to its durable backlog`, { error }));
  }
}

/**
 * Calls `onStart` once the one a stop gave up on has returned, or, if it
 * has not within `shutdownTimeoutMs`, anyway, with a warning: a start must
 * not hang for good on code the runtime cannot cancel.
 */
export async function afterAbandonedOnStart(r: ProcessRunner, previous: Promise<void>): Promise<void> {
  const services = r.requireServices();
  if (!(await settlesWithin(previous, services.clock, r.options.shutdownTimeoutMs))) {
    services.logger.warn(`'${r.agent.name}'.onStart of an earlier start, which a stop gave up on, is still running after ${r.options.shutdownTimeoutMs} ms; starting again anyway (two onStart calls now overlap)`);
  }
  await callOnStart(r);
}

/** Calls `onStart`; one that is not async returns no promise, one that throws becomes a rejection. */
export function callOnStart(r: ProcessRunner): Promise<void> {
  try {
    return Promise.resolve(r.agent.onStart());
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what onStart threw, whatever it is: the start fails with it as cause
    return Promise.reject(error);
  }
}

/**
 * Waits for `onStart`; once the runtime stops, or this agent is stopped
 * (`stopChild` while INITIALIZING), at most `shutdownTimeoutMs` more.
 */
export async function settlesUnlessStopped(r: ProcessRunner, attempt: StartAttempt, onStart: Promise<void>): Promise<boolean> {
  const services = r.requireServices();
  const wait = new AbandonableWait(onStart, services.clock, r.options.shutdownTimeoutMs);
  const abandon = (): void => {
    // The runtime stopping is a stop during this start too: no loop begins after it, so nothing queued is taken.
    attempt.stopAsked = true;
    wait.abandon();
  };
  const unwatch = whenAborted(services.stopping, abandon);
  if (attempt.stopAsked) abandon();
  attempt.abandon = abandon;
  try {
    return await wait.settled;
  } finally {
    unwatch();
    attempt.abandon = undefined;
  }
}
