import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { RuntimeServices } from "./runtime-services.js";

/** How a child's incarnation ended, as its supervisor sees it. */
export type ChildExit =
  | { readonly kind: "normal"; readonly reason: string }
  | { readonly kind: "crash"; readonly error: unknown };

/** How to stop an agent. */
export interface StopOptions {
  /**
   * `"current"` finishes the message being handled and leaves the rest queued;
   * `"all"` first handles every business message queued when the stop
   * begins (not those that arrive during the drain; a retry of one of them
   * is handled again at once).
   * @defaultValue "current"
   */
  drain?: "current" | "all";
  /** How long to wait for the drain (and, separately, for `onStop`). @defaultValue the agent's `shutdownTimeoutMs` */
  timeoutMs?: number;
}

/**
 * Refuses, with `INVALID_ARGUMENT` naming the field, stop options of
 * `stop(name, options)` that are not an object or hold a bad `drain` or `timeoutMs`.
 * @internal
 */
export function checkStopOptions(name: string, options: StopOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError("options", `stop('${name}') takes an options object { drain?, timeoutMs? }, got ${describeValue(options)}`);
  }
  const { drain, timeoutMs } = options;
  if (drain !== undefined && drain !== "current" && drain !== "all") {
    throw new InvalidArgumentError("drain", `stop('${name}'): drain must be "current" or "all", got ${describeValue(drain)}`);
  }
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 0)) {
    throw new InvalidArgumentError("timeoutMs", `stop('${name}'): timeoutMs must be a non-negative integer of milliseconds, got ${describeValue(timeoutMs)}`);
  }
}

/**
 * The parent side of a supervision link: told when a child's incarnation
 * ends on its own (crash, clean exit). Exits the parent asked for are not reported.
 * @internal
 */
export interface ChildParent {
  readonly name: string;
  childExited(child: SupervisedChild, exit: ChildExit, incarnation: number): void;
}

/*
 * The runtime's side of an agent or supervisor is keyed by symbols, not
 * names: a user's agent class is free to have its own `close()` or
 * `attach()` without the runtime calling it, or the compiler asking for
 * `override`.
 */
/** @internal */
export const attachChild: unique symbol = Symbol("civitas.attachChild");
/** @internal */
export const detachChild: unique symbol = Symbol("civitas.detachChild");
/** @internal */
export const startChild: unique symbol = Symbol("civitas.startChild");
/** @internal */
export const stopChild: unique symbol = Symbol("civitas.stopChild");
/** @internal */
export const closeChild: unique symbol = Symbol("civitas.closeChild");
/** @internal */
export const abandonChildStart: unique symbol = Symbol("civitas.abandonChildStart");

/**
 * Anything a supervisor can hold: an agent, a `Supervisor` or a
 * `DynamicSupervisor`. Its runtime-facing methods are symbol-keyed and
 * internal; what user code reads is `name`, `incarnation` and `attached`.
 */
export interface SupervisedChild {
  /** Its name, unique within the runtime. */
  readonly name: string;
  /** Counts starts; an exit report names the incarnation it ended. */
  readonly incarnation: number;
  /** Whether it belongs to a runtime (it was attached to one). */
  readonly attached: boolean;
  /** Links the child to its parent and the runtime's services, registering its names. @internal */
  [attachChild](parent: ChildParent, services: RuntimeServices): void;
  /** Frees the names the child (and its subtree) registered. @internal */
  [detachChild](): void;
  /** Starts (or restarts) the child. @internal */
  [startChild](): Promise<void>;
  /** Stops the child; resolves once it is stopped. @internal */
  [stopChild](options?: StopOptions): Promise<void>;
  /** Closes mailboxes for good: the child will not be started again. @internal */
  [closeChild](): void;
  /**
   * A stop is coming: bounds any start in flight in the child (or its
   * subtree), an `onStart` getting `shutdownTimeoutMs`. @internal
   */
  [abandonChildStart](): void;
}
