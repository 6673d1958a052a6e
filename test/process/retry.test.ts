/**
 * ErrorAction.RETRY: a message onError asks to retry is handled again, across
 * restarts and stops, and keeps its reply and TTL.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, ProcessStatus, type Message } from "../../src/index.js";
import { gate, rendezvous, type Gate } from "../support/agents.js";
import { runtimes, sleep, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { besideCrasher } from "../support/probe-agents.js";

const runtime = runtimes();

const supervised = supervisedRuntimes();

/**
 * Starts `flaky` beside a crasher under a ONE_FOR_ALL root (no backoff) and
 * sends it `{ job: 1 }`; once its handling opens `entered`, crashes the
 * sibling, so that flaky is stopped (drain "current") and restarted, keeping
 * its mailbox. Resolves once flaky is STOPPING, its message still held.
 */
async function restartWhileHeld(flaky: AgentProcess, entered: Gate): Promise<void> {
  const rt = await whenStarted(runtime(besideCrasher(flaky).root));
  await rt.send("flaky", { job: 1 });
  await entered.promise;
  await rt.send("crasher", {});
  await until(() => flaky.status === ProcessStatus.STOPPING, "flaky stopping");
}

describe("RETRY racing a restart", () => {
  it("a message onError asks to RETRY while a sibling's crash restarts the agent is handled again, not dropped", async () => {
    const attempts: number[] = [];
    const onError = rendezvous();
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        attempts.push(message.attempt);
        if (message.attempt === 0) throw new Error("transient");
      }
      override async onError(): Promise<ErrorAction> {
        await onError.hold();
        return ErrorAction.RETRY;
      }
    }
    const flaky = new Flaky("flaky", { shutdownTimeoutMs: 2000 });
    await restartWhileHeld(flaky, onError.entered);
    onError.proceed.open(); // onError answers RETRY: attempts are left, the mailbox stays open for the restart
    await until(() => flaky.incarnation === 2 && flaky.status === ProcessStatus.RUNNING, "flaky restarted");
    await until(() => attempts.length === 2, "the retried message handled", 1000);
    expect(attempts).toEqual([0, 1]);
  });
});

describe("a handler that fails after a restart's stop began", () => {
  it("still goes through onError, and its RETRY survives the restart", async () => {
    const attempts: number[] = [];
    const errors: number[] = [];
    const handler = rendezvous();
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        attempts.push(message.attempt);
        if (message.attempt === 0) {
          await handler.hold();
          throw new Error("transient");
        }
      }
      override async onError(_error: unknown, message: Message): Promise<ErrorAction> {
        errors.push(message.attempt);
        return ErrorAction.RETRY;
      }
    }
    const flaky = new Flaky("flaky", { shutdownTimeoutMs: 2000 });
    await restartWhileHeld(flaky, handler.entered);
    handler.proceed.open(); // the handler throws now, while the stop (drain "current") waits for it
    await until(() => flaky.incarnation === 2 && flaky.status === ProcessStatus.RUNNING, "flaky restarted");
    // "When handle throws (or rejects), the runtime calls onError(error, message) and does what it returns"
    await until(() => errors.length === 1, "onError consulted", 500);
    await until(() => attempts.length === 2, "the retried message handled", 500);
  });
});

describe("RETRY coverage", () => {
  it("an ask whose handling is retried still gets its reply, paired by correlation id", async () => {
    class Flaky extends AgentProcess {
      readonly attempts: number[] = [];
      override async handle(message: Message): Promise<Message> {
        this.attempts.push(message.attempt);
        if (message.attempt < 2) throw new Error("transient");
        return this.reply({ attempt: message.attempt });
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const flaky = new Flaky("flaky", { maxRetries: 3 });
    const rt = await whenStarted(supervised([flaky]));
    const reply = await rt.ask("flaky", { q: 1 }, { timeoutMs: 2000 });
    expect(reply.payload).toEqual({ attempt: 2 });
    expect(flaky.attempts).toEqual([0, 1, 2]);
    expect(flaky.incarnation).toBe(1);
    expect(rt.lateReplies).toBe(0);
  });

  it("with maxRetries 0, RETRY crashes the agent on the first failure", async () => {
    class Once extends AgentProcess {
      readonly attempts: number[] = [];
      override async handle(message: Message): Promise<void> {
        this.attempts.push(message.attempt);
        throw new Error("fail");
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const once = new Once("once", { maxRetries: 0 });
    const rt = await whenStarted(supervised([once]));
    await rt.send("once", {});
    await until(() => once.incarnation === 2);
    expect(once.attempts).toEqual([0]);
  });

  it("a retried message whose ttlMs elapsed is discarded, counted and reported, not handled again", async () => {
    const { TestClock } = await import("civitas-ts/testing");
    const clock = new TestClock();
    const calls: number[] = [];
    const held = gate();
    class Slow extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        calls.push(message.attempt);
        await held.promise;
        throw new Error("fail");
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const slow = new Slow("slow", { maxRetries: 5 });
    const rt = supervised([slow], { clock });
    const expired: Message[] = [];
    rt.on("message.expired", (m) => expired.push(m));
    await rt.start();
    await rt.send("slow", { n: 1 }, { ttlMs: 100 });
    await until(() => calls.length === 1);
    await clock.advance(101); // the message outlives its ttl while it is being handled
    held.open();
    await until(() => expired.length === 1);
    await sleep(10);
    expect(calls).toEqual([0]);
    expect(slow.mailbox.expiredCount).toBe(1);
    expect(expired.map((m) => [m.payload.n, m.attempt])).toEqual([[1, 1]]);
    expect(slow.status).toBe(ProcessStatus.RUNNING);
    expect(slow.incarnation).toBe(1);
  });
});
