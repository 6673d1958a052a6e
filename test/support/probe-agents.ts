import { AgentProcess, Supervisor, type JsonObject, type Message, type SupervisedChild } from "civitas-ts";
import { codeOf } from "./outcome.js";

/** Keeps every message it handles, in order. */
export class Sink extends AgentProcess {
  readonly seen: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.seen.push(message);
  }
}

/** Counts its `onStart` and `onStop` calls. */
export class Lifecycle extends AgentProcess {
  startCount = 0;
  stopCount = 0;
  override async onStart(): Promise<void> {
    this.startCount++;
  }
  override async onStop(): Promise<void> {
    this.stopCount++;
  }
}

/** Its `onStart` always throws ("cannot start"); counts its `onStop` calls (a failed start still runs onStop). */
export class FailsToStart extends AgentProcess {
  stopCount = 0;
  override async onStart(): Promise<void> {
    throw new Error("cannot start");
  }
  override async onStop(): Promise<void> {
    this.stopCount++;
  }
}

/** Runs `fn` inside handle() and replies with what it resolved to, or the error's code and message. */
export class Doer extends AgentProcess {
  fn: ((self: this) => Promise<unknown>) | undefined;
  /** Whether a failure's reply carries the error's message beside its code. */
  protected readonly repliesMessage: boolean = true;
  override async handle(): Promise<Message | void> {
    try {
      const value = await this.fn?.(this);
      return this.reply({ ok: true, value: value === undefined ? null : (value as JsonObject) });
    } catch (error) {
      if (!this.repliesMessage) return this.reply({ ok: false, code: codeOf(error) });
      return this.reply({ ok: false, code: codeOf(error), message: error instanceof Error ? error.message : String(error) });
    }
  }
}

/** Runs `fn` inside handle() and replies with what it resolved to, or the error's code. */
export class CodeReplier extends Doer {
  protected override readonly repliesMessage: boolean = false;
}

/** Blocks every handle() until `release()` is called. */
export class Stuck extends AgentProcess {
  release!: () => void;
  gate = new Promise<void>((r) => (this.release = r));
  override async handle(): Promise<void> {
    await this.gate;
  }
}

/** Throws on every message (and `onError` escalates, the default): a crash that makes its supervisor restart it (under ONE_FOR_ALL, its siblings too). */
export class Crasher extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("boom");
  }
}

/**
 * A ONE_FOR_ALL root ("root", no restart backoff) holding `child` beside a
 * {@link Crasher} ("crasher"): any message to the crasher makes the root stop
 * `child` and start it again.
 */
export function besideCrasher(child: SupervisedChild): { root: Supervisor; crasher: Crasher } {
  const crasher = new Crasher("crasher");
  return { root: new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [child, crasher] }), crasher };
}

/**
 * Counts its messages in state (`n`) and checkpoints each; records what its
 * writes were refused with (`writeErrors`, and `stopWriteError` for the
 * write of its `onStop`), how many messages it handled after a write was
 * refused with STATE_FENCED, its stops and its resumes: what the fencing tests
 * (PostgreSQL, simulation) look at.
 */
export class FencingWorker extends AgentProcess<{ n: number; stopped?: boolean }> {
  override state = { n: 0 } as { n: number; stopped?: boolean };
  readonly writeErrors: string[] = [];
  /** Business messages handled after one of its writes was refused with STATE_FENCED. */
  handledAfterFence = 0;
  stops = 0;
  stopWriteError: string | undefined;
  resumes = 0;

  override async handle(_message: Message): Promise<void> {
    if (this.writeErrors.includes("STATE_FENCED")) this.handledAfterFence++;
    this.state.n += 1;
    await this.checkpoint().catch((error: { code?: string }) => void this.writeErrors.push(error.code ?? "?"));
  }

  override async onStop(): Promise<void> {
    this.stops++;
    this.state.stopped = true;
    await this.checkpoint().catch((error: { code?: string }) => (this.stopWriteError = error.code ?? "?"));
  }

  override async onResume(): Promise<void> {
    this.resumes++;
  }
}
