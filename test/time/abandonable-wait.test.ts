import { describe, expect, it } from "vitest";
import { TestClock } from "../../src/testing/test-clock.js";
import { AbandonableWait } from "../../src/time/deadline.js";
import { whenAborted } from "../../src/time/when-aborted.js";

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("AbandonableWait", () => {
  it("waits as long as it takes until it is abandoned", async () => {
    const clock = new TestClock();
    const work = deferred();
    const wait = new AbandonableWait(work.promise, clock, 100);
    await clock.advance(1_000_000);
    work.resolve();
    expect(await wait.settled).toBe(true);
  });

  it("resolves true for a promise that rejects in time", async () => {
    const clock = new TestClock();
    const work = deferred();
    const wait = new AbandonableWait(work.promise, clock, 100);
    wait.abandon();
    work.reject(new Error("onStart failed"));
    expect(await wait.settled).toBe(true);
  });

  it("once abandoned, gives up after timeoutMs more, however often it is abandoned", async () => {
    const clock = new TestClock();
    const work = deferred();
    const wait = new AbandonableWait(work.promise, clock, 100);
    let result: boolean | undefined;
    void wait.settled.then((inTime) => (result = inTime));
    wait.abandon();
    await clock.advance(60);
    wait.abandon(); // a second stop does not push the deadline back
    await clock.advance(39);
    expect(result).toBeUndefined();
    await clock.advance(1);
    expect(result).toBe(false);
    work.resolve(); // settling late changes nothing
    expect(await wait.settled).toBe(false);
  });

  it("arms no timer when abandoned after the promise settled", async () => {
    const clock = new TestClock();
    const wait = new AbandonableWait(Promise.resolve(), clock, 100);
    expect(await wait.settled).toBe(true);
    wait.abandon();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("whenAborted", () => {
  it("calls every watcher once the signal aborts, and none that stopped watching", () => {
    const controller = new AbortController();
    const calls: string[] = [];
    whenAborted(controller.signal, () => calls.push("a"));
    const unwatchB = whenAborted(controller.signal, () => calls.push("b"));
    whenAborted(controller.signal, () => calls.push("c"));
    unwatchB();
    expect(calls).toEqual([]);
    controller.abort();
    controller.abort();
    expect(calls).toEqual(["a", "c"]);
  });

  it("calls a watcher at once on a signal that has aborted", () => {
    const calls: string[] = [];
    const unwatch = whenAborted(AbortSignal.abort(), () => calls.push("late"));
    expect(calls).toEqual(["late"]);
    unwatch();
  });

  it("shares one listener among the watchers of a signal", () => {
    const controller = new AbortController();
    let added = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
      added++;
      add(...args);
    });
    for (let i = 0; i < 100; i++) whenAborted(signal, () => undefined)();
    expect(added).toBe(1);
  });

  it("runs the other watchers when one throws, and reports the throw as an uncaught exception", async () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const failure = new Error("watcher bug");
    const uncaught: unknown[] = [];
    const listener = (error: unknown): void => void uncaught.push(error);
    const before = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", listener);
    try {
      whenAborted(controller.signal, () => {
        throw failure;
      });
      whenAborted(controller.signal, () => calls.push("after"));
      controller.abort();
      expect(calls).toEqual(["after"]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(uncaught).toEqual([failure]);
    } finally {
      process.off("uncaughtException", listener);
      for (const previous of before) process.on("uncaughtException", previous);
    }
  });
});
