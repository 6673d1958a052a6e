import { expect } from "vitest";
import { AgentProcess, type Message } from "../../src/index.js";

/** Replies to every message with its payload plus `from: <name>`; records what it handled. */
export class Echo extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<Message> {
    this.handled.push(message);
    return this.reply({ ...message.payload, from: this.name });
  }
}

/** Records every message and never replies. */
export class Silent extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.handled.push(message);
  }
}

export { gate, type Gate } from "../support/agents.js";

/** Polls `condition` on real timers until it holds; fails the test after `timeoutMs`. */
export async function eventually(condition: () => boolean, what = "condition", timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Lets queued promise callbacks and one turn of the event loop run, `turns` times. */
export async function turns(count = 5): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Awaits `promise`, expecting it to reject; returns the reason. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject, but it resolved");
}

/** Expects `promise` to reject with a CivitasError of `code`; returns the error. */
export async function rejectsWithCode(promise: Promise<unknown>, code: string): Promise<Error & { code: string }> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(Error);
  expect((error as { code?: unknown }).code).toBe(code);
  return error as Error & { code: string };
}

/** Runs `fn`, expecting it to throw a CivitasError of `code`; returns the error. */
export function throwsWithCode(fn: () => unknown, code: string): Error & { code: string } {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a ${code} error`).toBeInstanceOf(Error);
  expect((caught as { code?: unknown }).code).toBe(code);
  return caught as Error & { code: string };
}

/** Observes a promise without awaiting it. */
export interface Tracked<T> {
  readonly promise: Promise<T>;
  state: "pending" | "resolved" | "rejected";
  value?: T;
  reason?: unknown;
}

/** Tracks `promise` so a test can assert it is still pending. */
export function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { promise, state: "pending" };
  promise.then(
    (value) => {
      tracked.state = "resolved";
      tracked.value = value;
    },
    (reason: unknown) => {
      tracked.state = "rejected";
      tracked.reason = reason;
    },
  );
  return tracked;
}
