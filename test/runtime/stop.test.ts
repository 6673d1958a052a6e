/**
 * runtime.stop(): bounded by shutdownTimeoutMs, and never held by what a
 * stopped agent can no longer do.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it, afterEach, vi } from "vitest";
import { AgentProcess } from "civitas-ts";
import type { CivitasError} from "../../src/index.js";
import { ProcessStatus, Runtime, Supervisor, silentLogger, type Message } from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually, turns } from "../runtime/fixtures.js";
import { codeOf, outcome, track } from "../support/outcome.js";
import { sleep, supervisedRuntimes } from "../support/runtimes.js";

const supervised = supervisedRuntimes();

describe("shutdown with senders blocked on backpressure", () => {
  it("runtime.stop() does not wait out shutdownTimeoutMs for a handler blocked on a put to an agent that has already stopped", async () => {
    let releaseB!: () => void;
    const gate = new Promise<void>((r) => (releaseB = r));
    let sendOutcome: string | undefined;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
        await gate;
      }
    }
    class Sender extends AgentProcess {
      override async handle(): Promise<void> {
        // b's lane (capacity 1) is full: this put waits for room
        sendOutcome = await this.send("b", { n: 3 }).then(() => "sent", (e: unknown) => codeOf(e));
      }
    }
    const a = new Sender("a", { shutdownTimeoutMs: 5000 });
    const b = new Busy("b", { mailboxSize: 1, shutdownTimeoutMs: 5000 });
    const rt = supervised([a, b]); // stopped in reverse order: b first, then a
    await rt.start();
    await rt.send("b", { n: 1 }); // b handles it, blocked on the gate
    await rt.send("b", { n: 2 }); // fills b's one slot
    await rt.send("a", {});
    await sleep(20);
    const stopping = rt.stop();
    setTimeout(() => releaseB(), 20);
    const started = Date.now();
    expect(await outcome(stopping, 2000)).toEqual({ ok: true, value: undefined });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(sendOutcome).toBe("MAILBOX_CLOSED");
  });
});

const started: Runtime[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(started.splice(0).map((rt) => rt.stop()));
});

describe("runtime.stop() from listeners and handlers", () => {
  it("a throwing 'escalated' listener does not keep the runtime from stopping when the root gives up", async () => {
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    const root = new Supervisor("root", { children: [new Crasher("c")], maxRestarts: 0 });
    const rt = new Runtime({ root, logger: silentLogger, keepAlive: false });
    started.push(rt);
    let heard = 0;
    rt.on("escalated", () => {
      heard++;
      throw new Error("listener bug");
    });
    await rt.start();
    await rt.send("c", {});
    await eventually(() => heard === 1, "the root to give up");
    // the runtime stops the tree all the same
    await eventually(() => root.status === ProcessStatus.STOPPED, "the runtime to stop the tree");
    // SPEC §6: above the intensity at the root the tree is stopped; a stopped runtime refuses start().
    const restart = await rt.start().then(
      () => "resolved",
      (e: unknown) => (e as CivitasError).code,
    );
    expect(restart).toBe("RUNTIME_STOPPED");
    expect(await rt.send("c", {}).then(() => "delivered", (e: unknown) => (e as CivitasError).code)).toBe("RUNTIME_STOPPED");
  });

  it("runtime.stop() awaited inside handle() waits for that handler (as documented), and a stop started without awaiting finishes at once", async () => {
    const clock = new TestClock();
    const ref: { rt?: Runtime } = {};
    let stopping: ReturnType<typeof track<void>> | undefined;
    let finished = false;
    class Shutdown extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        stopping = track((ref.rt as Runtime).stop());
        if (message.payload.await === true) await stopping.promise;
        finished = true;
      }
    }
    /** A fresh runtime of one Shutdown agent "s", started and sent `{ await }`: its handler calls stop() on it. */
    const stopFromHandler = async (wait: boolean): Promise<void> => {
      const rt = new Runtime({ root: [new Shutdown("s", { shutdownTimeoutMs: 60_000 })], logger: silentLogger, keepAlive: false, clock });
      ref.rt = rt;
      started.push(rt);
      await rt.start();
      await rt.send("s", { await: wait });
    };
    // awaited: the stop waits for the handler, which waits for the stop, until shutdownTimeoutMs
    await stopFromHandler(true);
    await eventually(() => stopping !== undefined, "the handler to call stop()");
    await turns(50);
    expect(stopping?.state).toBe("pending");
    await clock.advance(60_000);
    await eventually(() => stopping?.state === "resolved", "the stop to give up on the handler");

    // not awaited: the handler returns, and the stop completes without any time passing
    stopping = undefined;
    finished = false;
    await stopFromHandler(false);
    await eventually(() => stopping?.state === "resolved", "the stop to complete");
    expect(finished).toBe(true);
  });
});
