/**
 * What a call threw or a promise settled to: {@link caught}, {@link rejected},
 * {@link rejection}, {@link rejectsWithCode}, {@link throwsWithCode}, a
 * promise observed without awaiting it ({@link track}), settled within a time
 * limit ({@link outcome}, {@link settlement}), {@link codeOf} an error, and
 * {@link expectCivitasError}.
 */
import { expect } from "vitest";
import { CivitasError } from "../../src/index.js";

import { sleep } from "./runtimes.js";

/** Expects `error` to be a CivitasError (SPEC §1: a stable string code and a message), of `code` when given. */
export function expectCivitasError(error: unknown, code?: string): void {
  expect(error, "expected an error").toBeDefined();
  expect(error).toBeInstanceOf(CivitasError);
  expect(typeof (error as CivitasError).code).toBe("string");
  if (code !== undefined) expect((error as CivitasError).code).toBe(code);
}

/** What `fn` threw, or `undefined` when it returned. */
export function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** What `promise` rejected with, or `undefined` when it resolved. */
export async function rejected(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Awaits `promise`, expecting a rejection; returns the reason. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => {
      throw new Error("expected the promise to reject, but it resolved");
    },
    (error: unknown) => error as Error & { code?: string },
  );
}

/** Expects `promise` to reject with a CivitasError of `code`; returns the error. */
export async function rejectsWithCode(promise: Promise<unknown>, code: string): Promise<Error & { code?: string }> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(Error);
  expect(error.code, `expected ${code}, got ${String(error.code)}: ${error.message}`).toBe(code);
  return error;
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

/** How a promise settled within a time limit: see {@link outcome}. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown } | "pending";

/** Settles to `{ ok: true, value }` or `{ ok: false, error }` within `ms`, or to `"pending"`. */
export async function outcome<T>(promise: Promise<T>, ms: number): Promise<Outcome<T>> {
  return Promise.race([
    promise.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
    new Promise<"pending">((resolve) => setTimeout(() => resolve("pending"), ms)),
  ]);
}

/** How a promise settles within `ms`: the `code` of its error (else the error as a string), `"resolved"`, or `"pending"`. */
export async function settlement(promise: Promise<unknown>, ms: number): Promise<string> {
  return Promise.race([
    promise.then(
      () => "resolved",
      (error: unknown) => String((error as { code?: unknown }).code ?? error),
    ),
    sleep(ms).then(() => "pending"),
  ]);
}

/** The code of a {@link CivitasError}, or `"not a CivitasError: …"` for anything else. */
export function codeOf(error: unknown): string {
  return error instanceof CivitasError ? error.code : `not a CivitasError: ${String(error)}`;
}
