import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import type { JsonObject } from "../message/json.js";
import { uuidv7 } from "../message/ids.js";
import { pauseOf } from "./pause.js";
import { isSealedJson, sealJson } from "../message/sealed-json.js";
import type { Message } from "../message/message.js";
import { checkStoredState } from "../state/state-record.js";
import { isoTime } from "../time/clock.js";
import { PauseDeadline } from "./pause-deadline.js";
import { cancelPause, expirePause, type CancelCause } from "./pause-settlement.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { announcedMarker, frozenMarker, markerJson, persistableState, SUSPENSION_KEY, type SuspensionMarker } from "../state/suspension-marker.js";
import type { ProcessRunner } from "./process-runner.js";
import { announcePause, suspendReceipt, suspendSpan } from "./pause-announcement.js";
import { answer } from "./effects.js";
import { agentIdentity } from "./pause-decision.js";
import { BACKLOG_KEY } from "./durable-backlog.js";

function persisted(): boolean {
  return true;
}

/** Who settled a pause, and how. */
export interface PauseDecision {
  readonly verdict: "resume" | "deny";
  /** The approver or decider (`"expiry"` for a deadline). */
  readonly by: string;
}

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
  /**
   * The number (`RuntimeServices.controlSent`) of the first `runtime.suspend`
   * that asked for this pause, if one did: a resume sent after it may lift
   * the pause (back to back), one sent before it may not.
   */
  askedBy: number | undefined;
  /** The deadline asked for (`expiresInMs`, from when it was asked), if any. */
  expiresAt: string | undefined;
}

/**
 * Durable suspension for one agent (SPEC §5): the suspend flag seen at the
 * loop boundary, the marker inside the checkpointed state, write-ahead
 * safety, and the pause's announcement (`onSuspend` and its receipt, run by
 * pause-announcement.ts). A pause is ended elsewhere, each function taking this control: approved in
 * resume.ts, denied, expired or cancelled in pause-settlement.ts, a decision
 * already on record completed in recorded-decision.ts.
 * @internal
 */
export class SuspensionControl {
  /** The marker of the current pause, or `undefined`. */
  marker: SuspensionMarker | undefined;
  /** A suspend asked for and not yet applied. */
  request: SuspendRequest | undefined;
  /**
   * The pause this agent last settled (resumed, denied or cancelled). A
   * restart must not restore it from a store that still holds it (the
   * decision's persist failed): it was settled, and settling it twice would
   * be a second decision.
   */
  lastSettled: string | undefined;
  /**
   * The marker {@link newMarker} minted last, until a pause is settled: its
   * id is newer than every id settled so far (ids minted in a process are
   * unique), so {@link wasSettled} need not compare it with
   * {@link lastSettled}: two ids of one length that differ compare in a
   * runtime call that walks both (~800 instructions), on every write of a pause.
   */
  private fresh: SuspensionMarker | undefined;
  /**
   * The pause this incarnation found when it started. A crash may have come
   * between its decision's receipt and the write clearing its marker, so
   * before it is decided the audit sink is asked for a decision on record
   * (`decisionOnRecord`, recorded-decision.ts): a pause is settled once.
   */
  restoredPause: string | undefined;
  /**
   * Resumes numbered up to this one were sent before the current pause could
   * be seen, and do not lift it: the `runtime.suspend` that asked for it, or,
   * for a pause the agent asked for itself, the last request sent when it
   * became SUSPENDED, or, for a pause restored unannounced, the last request
   * sent when it was announced. `undefined` for a pause restored announced
   * (nothing queued in this process predates it, or it was already seen).
   */
  private pauseAfter: number | undefined;
  /**
   * The last pause settled while this incarnation ran, with the numbers of
   * the control requests sent while it was in effect (after `from`, up to
   * `upTo`): such a request that is taken only after the pause was decided
   * came too late — it is refused, never answered as if it had decided.
   */
  private decided: { readonly suspensionId: string; readonly from: number | undefined; readonly upTo: number; readonly by: PauseDecision | undefined } | undefined;
  /**
   * Whether the current pause still owes its announcement: its `onSuspend`
   * or its `agent.suspend` receipt is not done (still running, failed, or
   * timed out). Every write meanwhile stores its marker flagged
   * `announced: false`, so a restart after a kill announces it again
   * (S9: no pause without its receipt).
   */
  announcementOwed = false;
  /**
   * The current pause's deadline, armed on the runtime's clock; made for the
   * first pause that has one (most agents never do, and an idle agent's
   * footprint counts).
   */
  deadline: PauseDeadline | undefined;

  constructor(readonly runner: ProcessRunner) {}

  /**
   * Records the intent to suspend; the loop acts on it at its next boundary.
   * `expiresInMs` (or the request's `payload.expiresInMs`) gives the pause a
   * deadline from now; a repeated suspend with one replaces the deadline,
   * without one keeps it.
   */
  requestSuspend(reason: string, request: Message | undefined, expiresInMs?: number): void {
    const pending = (this.request ??= { reason, waiting: [], marker: undefined, askedBy: undefined, expiresAt: undefined });
    const sent = request?.payload.sent;
    if (typeof sent === "number" && (pending.askedBy === undefined || sent < pending.askedBy)) pending.askedBy = sent;
    pending.reason = reason;
    const asked = expiresInMs ?? request?.payload.expiresInMs;
    if (typeof asked === "number" && this.runner.services !== undefined) pending.expiresAt = isoTime(this.runner.services.clock.now() + asked);
    if (request !== undefined) pending.waiting.push(request);
    const status = this.runner.currentStatus;
    // Asked for by an agent not paused yet (from handle(), onStart, a handler a stop came during, or a stopped agent's
    // late code): a checkpoint before the loop boundary stores it flagged as not announced yet (see
    // SuspensionMarker.announced). Minted now, so this.suspend() can name the pause it asked for.
    const unpaused = status !== ProcessStatus.SUSPENDED;
    if (unpaused && this.marker === undefined && this.runner.services !== undefined) {
      pending.marker =
        pending.marker === undefined
          ? this.newMarker(reason, this.runner.services.clock.now(), pending.expiresAt)
          : frozenMarker({ ...pending.marker, reason, ...(pending.expiresAt === undefined ? {} : { expiresAt: pending.expiresAt }) });
    }
    // An idle agent has no loop running to see the flag: start one (a start in progress starts it when done).
    if (status === ProcessStatus.RUNNING || status === ProcessStatus.SUSPENDED) this.runner.wake();
  }

  /** Applies a pending suspend request at the loop boundary; `undefined` when there is nothing to wait for. */
  applySuspendRequest(): Promise<void> | undefined {
    if (this.deadline?.due === true) {
      const expiring = expirePause(this);
      if (expiring !== undefined) return expiring;
    }
    const request = this.request;
    if (request === undefined) return undefined;
    let applying: Promise<void> | undefined;
    if (this.runner.currentStatus === ProcessStatus.RUNNING) {
      this.request = undefined;
      this.pauseAfter = request.askedBy ?? this.runner.requireServices().controlSent.count;
      applying = this.enterSuspended(request.reason, request.marker, request.expiresAt);
    } else if (this.runner.currentStatus === ProcessStatus.SUSPENDED) {
      this.request = undefined;
      applying = this.updateReason(request.reason, request.expiresAt);
    } else {
      return undefined;
    }
    // Entered at once (nothing owed, the write done): answered now, with no promise for the loop to wait for.
    return applying === undefined ? this.applied(request) : applying.then(() => this.applied(request));
  }

  /**
   * Answers the requests waiting for the suspend `request` once it is
   * applied; then denies a pause whose deadline had passed when it was
   * entered or updated (`expiresInMs: 0`), before the loop goes on.
   */
  private applied(request: SuspendRequest): Promise<void> | undefined {
    // runtime.suspend resolves with the pause it asked for (the current one: a repeated suspend names the same).
    const pause = this.marker === undefined ? undefined : pauseOf(this.marker);
    for (const waiting of request.waiting) void answer(this.runner, waiting, pause);
    return this.deadline?.due === true ? expirePause(this) : undefined;
  }

  /**
   * S5: stop dispatching in memory first, then persist; a failed persist
   * never un-suspends. `undefined` when the pause is entered and announced
   * at once (see {@link announcePause}).
   */
  enterSuspended(reason: string, prepared: SuspensionMarker | undefined, expiresAt?: string): Promise<void> | undefined {
    const services = this.runner.requireServices();
    const marker = prepared ?? this.newMarker(reason, services.clock.now(), expiresAt);
    const span = suspendSpan(this.runner, marker, false);
    this.runner.transition(ProcessStatus.SUSPENDED);
    this.setMarker(marker);
    // What is queued now is accepted work of a paused agent: the marker's write stores it too.
    this.runner.backlog?.adoptQueued();
    return announcePause(this, marker, span);
  }

  /**
   * Announces a pause the agent was restored into that was stored before it
   * was announced (`announced: false`: a checkpoint carried it, then a crash
   * or a stop came before the loop boundary): its persist, `onSuspend` and
   * `agent.suspend` receipt, as entering it would have given.
   * `startedAfter`: on a restart, the runtime's count of control requests
   * when it began (resumes numbered up to it were queued before the restart
   * and cannot have been meant for this pause); `undefined` on a first start
   * (a resume sent while it starts is meant for the stored pause).
   */
  announceRestored(startedAfter: number | undefined): Promise<void> {
    const stored = this.marker;
    if (stored?.announced !== false) return Promise.resolve();
    const marker = announcedMarker(stored);
    const span = suspendSpan(this.runner, marker, true);
    this.setMarker(marker);
    // Resumes queued before a restart (one sent while the agent still ran) were not meant for this pause.
    this.pauseAfter = this.request?.askedBy ?? startedAfter;
    return announcePause(this, marker, span, true) ?? Promise.resolve(); // a stored pause is always announced with a promise
  }

  /**
   * S10: suspending a suspended agent keeps `since` and `suspensionId`,
   * updates the reason, and replaces the deadline when a new one is given.
   */
  async updateReason(reason: string, expiresAt?: string): Promise<void> {
    const marker = this.marker;
    if (marker === undefined || (marker.reason === reason && (expiresAt === undefined || expiresAt === marker.expiresAt))) return;
    this.setMarker({ ...marker, reason, ...(expiresAt === undefined ? {} : { expiresAt }) });
    await this.persistMarker("suspend", undefined);
    const details: JsonObject = { reason, suspensionId: marker.suspensionId };
    if (expiresAt !== undefined) details.expiresAt = expiresAt;
    await suspendReceipt(this.runner, "agent.suspend.update", details);
  }

  /**
   * Whether the resume `request` was sent before the current pause could be
   * seen (by the runtime's count of control requests): sent while the agent
   * was running, it was a no-op, and it must not approve a pause it could
   * not have seen. A resume sent after a `runtime.suspend` (back to back)
   * still lifts that pause.
   */
  predatesPause(request: Message): boolean {
    const after = this.pauseAfter;
    const sent = request.payload.sent;
    return after !== undefined && typeof sent === "number" && request.payload.suspensionId === undefined && sent <= after;
  }

  /**
   * The pause a decision `request` (naming no pause) was sent to and that
   * another decision — an expiry, another approver, the other verdict —
   * settled before the request was taken; `undefined` when the agent was
   * running when it was sent (a resume of a running agent is a no-op), or
   * when the decision taken is this one (the same verdict by the same
   * approver, sent twice).
   */
  decidedBefore(request: Message): string | undefined {
    const decided = this.decided;
    const { sent, approver, decision } = request.payload;
    if (decided === undefined || typeof sent !== "number" || request.payload.suspensionId !== undefined) return undefined;
    if (sent <= (decided.from ?? 0) || sent > decided.upTo) return undefined;
    const verdict = decision === "deny" ? "deny" : "resume";
    return decided.by?.verdict === verdict && decided.by.by === approver ? undefined : decided.suspensionId;
  }

  /**
   * Keeps a pause the agent asked for (`this.suspend()`) that a stop came
   * before: it is written onto the last stored record (or the initial state),
   * flagged as not announced, so the next start on this store comes back
   * SUSPENDED and announces it then. The in-memory `state` is not written:
   * it may hold the changes of a handler that crashed or was abandoned,
   * which only a checkpoint may store.
   */
  async keepAskedPause(initialState: () => JsonObject): Promise<void> {
    const asked = this.request?.marker;
    if (asked === undefined || this.marker !== undefined) return;
    const services = this.runner.requireServices();
    const name = this.runner.agent.name;
    try {
      const stored = await services.store.get(name);
      const base = stored === undefined ? initialState() : checkStoredState(name, stored);
      await services.store.set(name, persistableState(base, asked, name, false));
    } catch (error) {
      services.logger.warn(`'${name}' stopped before it entered the pause it asked for, and that pause could not be stored; the next start will not be SUSPENDED`, { error });
    }
  }

  /** The marker of a pause that begins at `nowMs` (with a deadline when `expiresAt` is given), frozen (and sealed) as {@link setMarker} keeps it. */
  newMarker(reason: string, nowMs: number, expiresAt?: string): SuspensionMarker {
    const since = isoTime(nowMs);
    const suspensionId = uuidv7(nowMs);
    const identity = agentIdentity(this.runner); // sealed when its capabilities are strings
    const fields = expiresAt === undefined ? { reason, since, approver: null, suspensionId, identity } : { reason, since, approver: null, suspensionId, identity, expiresAt };
    // Built here from checked parts (strings, null, a sealed identity): sealed as it is, where frozenMarker would copy it and check each part again.
    const marker = typeof reason === "string" && isSealedJson(identity) ? sealJson(fields) : frozenMarker(fields);
    this.fresh = marker;
    return marker;
  }

  /** Whether `marker` names the pause this agent settled last (see {@link lastSettled}): such a pause is never written back. */
  wasSettled(marker: SuspensionMarker): boolean {
    const settled = this.lastSettled;
    return settled !== undefined && marker !== this.fresh && marker.suspensionId === settled;
  }

  /** Persists the marker change; on failure logs and records degraded durability instead of throwing. */
  persistMarker(change: "suspend" | "resume" | "deny", span: Span | undefined): Promise<boolean> {
    return this.runner.persist().then(persisted, (error: unknown) => this.degraded(change, span, error));
  }

  /** Reports a failed persist of the marker change (logged, on the span): degraded durability; `false`. */
  degraded(change: "suspend" | "resume" | "deny", span: Span | undefined, error: unknown): boolean {
    const consequence =
      change === "suspend"
        ? "it stays SUSPENDED in memory, but a crash now would restart it without the pause"
        : "it runs again, but a crash now would restart it SUSPENDED";
    this.runner.requireServices().logger.warn(`degraded durability: '${this.runner.agent.name}' could not persist its ${change}; ${consequence}`, { error });
    this.runner.requireServices().telemetry.addEvent(span, "civitas.durability.degraded", { "exception.message": error instanceof Error ? error.message : describeValue(error) });
    return false;
  }

  /**
   * Sets the pause in memory and shows it in the agent's `state` as
   * `json` (by default a fresh copy: a restore passes the stored one it
   * was read from, when that holds nothing else).
   */
  setMarker(marker: SuspensionMarker | undefined, json?: JsonObject): void {
    // Frozen: agent.suspension and the hooks get this very object (or copies sharing its identity), and must not change it.
    this.marker = marker === undefined ? undefined : frozenMarker(marker);
    if (this.deadline !== undefined || this.marker?.expiresAt !== undefined) {
      const runner = this.runner;
      this.deadline ??= new PauseDeadline(() => {
        // An idle agent has no loop running to see the deadline: start one (as requestSuspend does).
        if (runner.currentStatus === ProcessStatus.SUSPENDED) runner.wake();
      });
      this.deadline.follow(this.marker, runner.services?.clock);
    }
    if (marker === undefined) this.announcementOwed = false;
    const state = this.runner.agent.state;
    if (marker === undefined) delete state[SUSPENSION_KEY];
    else state[SUSPENSION_KEY] = json ?? markerJson(marker);
  }

  /**
   * The pause `marker` was decided (resumed or denied, by `decision`) or
   * cancelled (no `decision`): its marker is cleared in memory, and it stays settled.
   */
  settle(marker: SuspensionMarker, decision?: PauseDecision): void {
    this.setMarker(undefined);
    this.lastSettled = marker.suspensionId;
    this.fresh = undefined; // it may be the one settled now
    const services = this.runner.services;
    if (services !== undefined) this.decided = { suspensionId: marker.suspensionId, from: this.pauseAfter, upTo: services.controlSent.count, by: decision };
    this.pauseAfter = undefined;
    // A suspend request still pending for this very pause (asked for before a crash, restored from the store) is spent.
    const request = this.request;
    if (request?.marker?.suspensionId === marker.suspensionId) {
      this.request = undefined;
      for (const waiting of request.waiting) void answer(this.runner, waiting, pauseOf(marker));
    }
  }

  /**
   * Forgets the suspension for good (permanent removal, `cause`, by the
   * supervisor `by`), so a future agent of the same name does not come back
   * paused. A pause the agent holds is cancelled on the record first
   * (`agent.suspend.cancelled`); if that receipt cannot be recorded, the
   * marker is kept (see {@link cancelPause}).
   * @internal
   */
  async clearSuspension(cause: CancelCause, by: string): Promise<void> {
    const cancelled = await cancelPause(this, cause, by);
    // From here on a late checkpoint (an abandoned handler or hook) cannot write the marker back.
    this.runner.removed = true;
    if (!cancelled) {
      this.deadline?.cancel();
      return;
    }
    this.setMarker(undefined);
    // Removed for good: its queued messages are dropped with its mailbox, so the store must not replay them.
    this.runner.backlog?.clear();
    // The store may hold a marker memory no longer does (a resume whose persist failed): clear it there, with any backlog.
    const store = this.runner.requireServices().store;
    const stored = await store.get(this.runner.agent.name);
    if (stored !== undefined && (SUSPENSION_KEY in stored || BACKLOG_KEY in stored)) {
      const cleared = persistableState(stored, undefined, this.runner.agent.name);
      delete cleared[BACKLOG_KEY];
      await store.set(this.runner.agent.name, cleared);
    }
  }
}
