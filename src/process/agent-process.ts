import { InvalidArgumentError } from "../errors/errors.js";
import { assertValidName } from "../bus/registry.js";
import { uuidv7 } from "../message/ids.js";
import type { JsonObject, JsonPayload } from "../message/json.js";
import type { Message } from "../message/message.js";
import type { Mailbox } from "../mailbox/mailbox.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { abandonChildStart, attachChild, closeChild, detachChild, startChild, stopChild, type ChildParent, type StopOptions, type SupervisedChild } from "../contracts/child.js";
import type { ProcessStatus } from "../contracts/process-status.js";
import { frozenMarker, type SuspensionMarker } from "../state/suspension-marker.js";
import type { ApprovalRule, ApprovalView } from "../approvals/approval-types.js";
import type { AgentFactory, AnyAgentProcess, ChildTerminationReason } from "./dynamic-host.js";
import { resolveAgentOptions, type AgentProcessOptions } from "./agent-options.js";
import { composeOutgoing, composeReply, handOutReply } from "./envelope.js";
import { ErrorAction } from "./error-action.js";
import type { PauseOptions } from "./pause-deadline.js";
import { requestOwnPause, type Pause } from "./pause.js";
import type { CancelCause } from "./pause-settlement.js";
import { cancelApprovalsOnRemoval } from "./approval-cancel.js";
import { ProcessRunner } from "./process-runner.js";
import type { AskOptions, SendOptions } from "./send-options.js";
import { removeFromHost, sendToSelf } from "./effects.js";
import { askFrom, broadcastFrom, sendCapableFrom } from "./outgoing.js";
import { currentApproval, requestHold } from "./approval-gate.js";

/** Key of an agent's "forget your suspension" hook, used by a `DynamicSupervisor` removing it. @internal */
export const clearSuspension: unique symbol = Symbol("civitas.clearSuspension");

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
 * The state type may be an `interface` (checked like a payload, see
 * {@link JsonPayload}): `interface Totals { count: number }` then
 * `class Counter extends AgentProcess<Totals>`.
 *
 * @example Typed messages: a handler names the payload it expects
 * ```ts
 * interface Payment { invoice: string; amountCents: number }
 * interface Receipt { invoice: string; paid: boolean }
 * class Payments extends AgentProcess {
 *   override async handle(message: Message<Payment>) {
 *     return this.reply<Receipt>({ invoice: message.payload.invoice, paid: true });
 *   }
 * }
 * const receipt = await runtime.ask<Payment, Receipt>("payments", { invoice: "INV-1", amountCents: 4000 });
 * ```
 */
export class AgentProcess<S extends JsonPayload<S> = JsonObject> implements SupervisedChild {
  /** The agent's unique name within its runtime. */
  readonly name: string;
  /** Capability tags, kept across restarts. */
  readonly capabilities: readonly string[];
  /** The agent's state: a plain JSON object, persisted by {@link AgentProcess.checkpoint} and restored on every start. */
  state: S;

  readonly #runner: ProcessRunner;
  #id: string | undefined;

  /**
   * @param name - unique within the runtime: non-empty, no whitespace or glob characters
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad name or option
   */
  constructor(name: string, options?: AgentProcessOptions) {
    assertValidName(name, "agent");
    this.name = name;
    const resolved = resolveAgentOptions(options);
    this.capabilities = resolved.capabilities;
    // The runner stores and restores the state as the JSON object it is; S only types the subclass's view of it.
    this.#runner = new ProcessRunner(this as unknown as AgentProcess, resolved);
    this.state = {} as S;
  }

  /**
   * A UUIDv7 that identifies this instance, made when first read (the
   * runtime itself never reads it: 100,000 idle agents hold no id they are
   * never asked for).
   */
  get id(): string {
    return (this.#id ??= uuidv7());
  }

  /** The lifecycle status. */
  get status(): ProcessStatus {
    return this.#runner.currentStatus;
  }

  /**
   * The marker of the pause the agent is in, or `undefined` when it is in
   * none. Already set in `onStart` when the start restored a pause. A frozen
   * copy: the pause is the runtime's, and changing what this returns (then
   * calling `checkpoint()`) cannot change it.
   */
  get suspension(): SuspensionMarker | undefined {
    const marker = this.#runner.suspension.marker;
    return marker === undefined ? undefined : frozenMarker(marker);
  }

  /** How many times this agent has been started (1 after the first start, 2 after a restart …). */
  get incarnation(): number {
    return this.#runner.starts;
  }

  /** The agent's mailbox; it exists once the agent belongs to a runtime. */
  get mailbox(): Mailbox {
    return this.#runner.mailbox;
  }

  // ---- hooks -------------------------------------------------------------

  /** Runs on every (re)start after `state` is restored, before the first message. */
  async onStart(): Promise<void> {}

  /**
   * Handles one business message. Return `this.reply(...)` to answer an `ask`
   * (or any message to have it routed). An override may name the payload
   * type it expects, `handle(message: Message<Payment>)`, and return a typed
   * reply (`Promise<Message<Receipt>>`): the base leaves the payload type
   * open (`any`) so that every override, typed or untyped, fits it.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- open payload type: an override narrows it to its own (Message<Payment>)
  async handle(_message: Message<any>): Promise<Message<any> | void> {}

  /** Decides what a failed message leads to; an override may type the message as `handle` does. @defaultValue `ErrorAction.ESCALATE` */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- open payload type, as for handle
  async onError(_error: unknown, _message: Message<any>): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }

  /** Runs when the agent stops, also after a crash. */
  async onStop(): Promise<void> {}

  /**
   * Runs when the agent enters a new pause, at least once per pause: also on
   * a start that restores a pause whose announcement was not finished (a
   * kill or stop came before it, or an earlier `onSuspend` failed), so it
   * may run twice for one `suspensionId`. Not on a restore of an announced
   * pause, nor when only the reason is updated.
   */
  async onSuspend(_reason: string): Promise<void> {}

  /**
   * Runs when `approver` has resumed the agent from the pause `marker`
   * (its reason and `suspensionId`), after the resume's audit receipt and
   * the cleared marker were written; carry out the approved action here.
   */
  async onResume(_approver: string, _marker: SuspensionMarker): Promise<void> {}

  /**
   * Runs when `decider` has denied the pause `marker` (`runtime.deny`), or
   * when its deadline passed (`decider` is then `"expiry"`), after the
   * `agent.deny` receipt and the cleared marker were written; the agent is
   * RUNNING again. Drop the pending action here: it was not approved.
   * `reason` is the denial's reason (`""` when none was given). Runs
   * instead of `onResume`, never with it.
   * @example
   * ```ts
   * override async onDeny(decider: string, marker: SuspensionMarker, reason: string) {
   *   delete this.state.pending;
   *   await this.checkpoint();
   * }
   * ```
   */
  async onDeny(_decider: string, _marker: SuspensionMarker, _reason: string): Promise<void> {}

  /**
   * Runs when a message this agent held for approval was denied, or its
   * request expired or was cancelled: nothing was handled (and an asker
   * still waiting was rejected with `APPROVAL_DENIED`). `approval` says who
   * decided and why.
   */
  async onApprovalDenied(_approval: ApprovalView): Promise<void> {}

  /** Handles a `civitas.eval.correction` message (instead of `handle`); an override may type the message as `handle` does. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- open payload type, as for handle
  async onCorrection(_message: Message<any>): Promise<void> {}

  /** Told when an agent this one spawned under a `DynamicSupervisor` is gone for good. */
  async onChildTerminated(_name: string, _reason: ChildTerminationReason): Promise<void> {}

  // ---- messaging ---------------------------------------------------------

  /**
   * Sends `payload` to the agent named `recipient`, waiting while its mailbox is full.
   * Rejects with `AGENT_NOT_FOUND`, `RESERVED_MESSAGE_TYPE`, `PAYLOAD_NOT_SERIALIZABLE` or `MAILBOX_CLOSED`.
   * @typeParam T - the payload's type (inferred); it must be JSON ({@link JsonPayload}).
   */
  send<T extends JsonPayload<T> = JsonObject>(recipient: string, payload: T, options?: SendOptions): Promise<void> {
    // Not async, and not a call into outgoing.ts as its siblings are: this is the hot path, and an async
    // wrapper costs a promise per message, a further call level ~2 % (callgrind: ping-pong, fan-in, policy).
    try {
      const message = composeOutgoing(this.#runner, recipient, payload as JsonObject, options?.type, options?.ttlMs);
      if (recipient === this.name) return sendToSelf(this.#runner, message, options?.signal);
      return this.#runner.requireServices().bus.deliver(message, options?.signal);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what composing threw, a CivitasError
      return Promise.reject(error);
    }
  }

  /**
   * Sends a request and resolves with the reply message.
   * Rejects with `ASK_TIMEOUT` after `timeoutMs` (30 s by default); its stack
   * shows the async functions that were awaiting the ask. Rejects at once with
   * `MAILBOX_CLOSED` when the recipient stops for good (a halt,
   * `ErrorAction.STOP`, a despawn) before it takes the request, and with
   * `HANDLER_FAILED` (the error as `cause`) when its `handle` threw and its
   * `onError` ended the message (`SKIP`, `STOP`, `ESCALATE`, `RETRY` exhausted). Asking an agent
   * that is itself waiting on an ask to this one deadlocks until the timeout.
   * @typeParam Req - the request payload's type (inferred); it must be JSON ({@link JsonPayload}).
   * @typeParam Res - the reply payload's type you expect; the reply is not checked against it at run time.
   */
  ask<Req extends JsonPayload<Req> = JsonObject, Res extends JsonPayload<Res> = JsonObject>(recipient: string, payload: Req, options?: AskOptions): Promise<Message<Res>> {
    return askFrom(this.#runner, recipient, payload as JsonObject, options) as Promise<Message<Res>>;
  }

  /**
   * Sends to one agent that declares `capability` (round-robin among them);
   * with a transport, an agent of this runtime first, else one another
   * runtime on the bus announced. Rejects with `AGENT_NOT_FOUND` when none does.
   * @typeParam T - the payload's type (inferred); it must be JSON ({@link JsonPayload}).
   */
  async sendCapable<T extends JsonPayload<T> = JsonObject>(capability: string, payload: T, options?: SendOptions): Promise<void> {
    await sendCapableFrom(this.#runner, capability, payload as JsonObject, options);
  }

  /**
   * Sends `payload` to every other agent whose name matches the glob `pattern`
   * (`*`, `?`, `[abc]`), with a transport also those other runtimes on the bus
   * announced. Resolves with how many agents it was sent to.
   * @typeParam T - the payload's type (inferred); it must be JSON ({@link JsonPayload}).
   */
  async broadcast<T extends JsonPayload<T> = JsonObject>(pattern: string, payload: T, options?: SendOptions): Promise<number> {
    return broadcastFrom(this.#runner, pattern, payload as JsonObject, options);
  }

  /**
   * Builds the reply to the message being handled; return it from `handle`.
   * @typeParam T - the reply payload's type (inferred, or the asker's `Res`); it must be JSON ({@link JsonPayload}).
   * @throws {@link InvalidArgumentError} outside `handle`
   */
  reply<T extends JsonPayload<T> = JsonObject>(payload: T): Message<T> {
    const request = this.#runner.current;
    if (request === undefined) {
      throw new InvalidArgumentError("reply", `'${this.name}' called reply() outside handle(); reply only to the message being handled`);
    }
    return handOutReply(composeReply(this.#runner, request, payload as JsonObject)) as Message<T>;
  }

  /**
   * Persists `state` to the runtime's store in one atomic write.
   * Rejects with the store's error, with `PAYLOAD_NOT_SERIALIZABLE` when `state` is not
   * plain JSON, or with `AGENT_NOT_FOUND` once the agent has been removed for
   * good (a late checkpoint must not write back what the removal cleared).
   */
  async checkpoint(): Promise<void> {
    await this.#runner.persist();
  }

  /**
   * Asks to pause this agent and returns at once: safe inside `handle()`
   * and `onStart`. The message being handled finishes; before the next one
   * the agent becomes SUSPENDED, persists its marker with its state in one
   * write, runs `onSuspend(reason)` and records the `agent.suspend` receipt;
   * with an `onSuspend` or an audit sink, a second write then records that
   * the pause was announced. A `checkpoint()` between this call and the
   * loop boundary already stores the pause with the state.
   * Only `runtime.resume(name, approver)` (an approval) or `runtime.deny(name, decider)` ends it,
   * or its deadline passing, or a halt or permanent removal of the agent (which cancel it).
   * Suspending a suspended agent keeps its `since` and `suspensionId` and updates the reason.
   * With `expiresInMs` the pause has a deadline (from this call; a repeated
   * suspend with one replaces it): once it passes, also while the process
   * is down, the pause is denied by decider `"expiry"` (`onDeny` runs).
   *
   * Returns the pause at once — its `suspensionId`, and its `expiresAt` when
   * it has a deadline — so a reply can name what to approve: the pause it
   * is about to enter, or the one it is in (a repeated suspend names the same).
   * @throws {@link InvalidArgumentError} when `reason` is not a string of at most 1,024 characters, or `expiresInMs` not a non-negative number;
   *   `RUNTIME_NOT_STARTED` when the agent belongs to no runtime yet
   * @example
   * ```ts
   * const { suspensionId, expiresAt } = this.suspend("payment over limit", { expiresInMs: 24 * 3600_000 });
   * return this.reply({ awaitingApproval: suspensionId, decideBy: expiresAt ?? null });
   * ```
   */
  suspend(reason = "", options: PauseOptions = {}): Pause {
    return requestOwnPause(this.#runner, reason, options);
  }

  /**
   * Holds the message being handled for approval instead of handling it now:
   * once `handle` returns, the message is stored with a request under `rule`
   * (one atomic write), and the agent goes on with its other messages. When
   * the rule is satisfied the same message comes back to `handle`, once,
   * with {@link AgentProcess.approval} set; on a deny or expiry it never
   * does. What `handle` returns now is dropped (an asker gets its reply then).
   * @throws {@link InvalidArgumentError} outside `handle`, or for a malformed rule or reason
   * @example
   * ```ts
   * if (this.approval === undefined && payload.amountCents > 100_000) {
   *   this.requireApproval({ reason: "large payment", rule: { stages: [{ approvers: ["ana", "ben"], min: 2 }] } });
   *   return;
   * }
   * ```
   */
  requireApproval(options: { rule: ApprovalRule; reason: string }): void {
    requestHold(this.#runner, options);
  }

  /** The approval of the message being handled, when it is a held message released by its approval; else `undefined`. */
  get approval(): ApprovalView | undefined {
    return currentApproval(this.#runner.gate, this.#runner.current);
  }

  // ---- dynamic children --------------------------------------------------

  /**
   * Starts a new agent under this agent's `DynamicSupervisor`; this agent is
   * told through `onChildTerminated` when it is gone for good.
   * Rejects with `NO_DYNAMIC_SUPERVISOR` when this agent is not under one.
   */
  async spawn<A extends AnyAgentProcess>(factory: AgentFactory<A>, name: string, options?: JsonObject & AgentProcessOptions): Promise<A> {
    return this.#runner.dynamicHost().spawn(factory, name, options, this.name);
  }

  /**
   * Stops and removes a child of this agent's `DynamicSupervisor`. An agent
   * may despawn itself from `handle()`, a hook or `onStart`: the promise then
   * resolves at once, and the agent is removed as soon as that code is done.
   */
  async despawn(name: string): Promise<void> {
    await removeFromHost(this.#runner, name, (host) => host.despawn(name));
  }

  /**
   * Gracefully stops and removes a child of this agent's `DynamicSupervisor`,
   * draining as asked. Called by an agent on itself from `handle()`, a hook
   * or `onStart`, it resolves at once, like {@link AgentProcess.despawn}.
   */
  async stop(name: string, options?: StopOptions): Promise<void> {
    await removeFromHost(this.#runner, name, (host) => host.stop(name, options));
  }

  // ---- supervision (internal) --------------------------------------------

  /** Whether it belongs to a runtime (it was passed to one). @internal */
  get attached(): boolean {
    return this.#runner.services !== undefined;
  }

  /** @internal */
  [attachChild](parent: ChildParent, services: RuntimeServices): void {
    this.#runner.attach(parent, services);
  }

  /** @internal */
  [detachChild](): void {
    this.#runner.detach();
  }

  /** @internal */
  [closeChild](): void {
    this.#runner.close();
  }

  /** @internal */
  [abandonChildStart](): void {
    this.#runner.abandonStart();
  }

  /** @internal */
  [startChild](): Promise<void> {
    return this.#runner.startChild();
  }

  /** @internal */
  [stopChild](options?: StopOptions): Promise<void> {
    return this.#runner.stopChild(options);
  }

  /**
   * Forgets the suspension for good (permanent removal), so a future agent
   * of the same name does not come back paused; its pending approval
   * requests are cancelled on the record first, while its state may still
   * be written (`approval-cancel.ts`).
   * @internal
   */
  async [clearSuspension](cause: CancelCause, by: string): Promise<void> {
    await cancelApprovalsOnRemoval(this.#runner, cause, by);
    return this.#runner.suspension.clearSuspension(cause, by);
  }
}
