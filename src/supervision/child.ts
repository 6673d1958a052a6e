import type { RuntimeServices } from "../runtime/services.js";

/** How a child's incarnation ended, as its supervisor sees it. */
export type ChildExit =
  | { readonly kind: "normal"; readonly reason: string }
  | { readonly kind: "crash"; readonly error: unknown };

/** How to stop an agent. */
export interface StopOptions {
  /**
   * `"current"` finishes the message being handled and leaves the rest queued;
   * `"all"` first handles every business message already queued.
   * @defaultValue "current"
   */
  drain?: "current" | "all";
  /** How long to wait for the drain (and, separately, for `onStop`). @defaultValue the agent's `shutdownTimeoutMs` */
  timeoutMs?: number;
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

/**
 * Anything a supervisor can hold: an agent or another supervisor.
 * @internal
 */
export interface SupervisedChild {
  readonly name: string;
  /** Counts starts; an exit report names the incarnation it ended. */
  readonly incarnation: number;
  /** Whether it belongs to a runtime (it was attached to one). */
  readonly attached: boolean;
  /** Links the child to its parent and the runtime's services, registering its names. */
  attach(parent: ChildParent, services: RuntimeServices): void;
  /** Frees the names the child (and its subtree) registered. */
  detach(): void;
  /** Starts (or restarts) the child. */
  startChild(): Promise<void>;
  /** Stops the child; resolves once it is stopped. */
  stopChild(options?: StopOptions): Promise<void>;
  /** Closes mailboxes for good: the child will not be started again. */
  close(): void;
}
