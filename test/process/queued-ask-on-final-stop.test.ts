/**
 * An ask queued for an agent that then stops for good fails at once
 * (MAILBOX_CLOSED), instead of waiting out its timeoutMs.
 *
 * Each test pins a defect found by the review of e18d1d6..HEAD
 * (stopWhileStarting, announcementOwed, startedAfter) (these tests were in
 * test/review/fixes-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ErrorAction, type Message, Supervisor } from "../../src/index.js";
import { heldHook, rendezvous } from "../support/agents.js";
import { outcome, settlement, codeOf } from "../support/outcome.js";
import { runtimes, sleep, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";

const runtime = runtimes();

// a stop that fails fails the test (awaited in full)
const supervised = supervisedRuntimes({ stop: "full" });

/** Holds its first message until `release()` is called, then answers every ask. */
class Gate extends AgentProcess {
  release!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.hold === true) await this.gate;
    if (message.payload.stop === true) throw new Error("stop me");
    return this.reply({ ok: true });
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.STOP;
  }
}

describe("a queued ask on the priority lane when the mailbox closes", () => {
  it("fails a queued ask on the priority lane (civitas.eval.halt) with MAILBOX_CLOSED, as before d26c756, instead of leaving it to time out", async () => {
    const busy = heldHook("handle");
    const dyn = new DynamicSupervisor("dyn");
    const rt = await whenStarted(runtime([dyn]));
    await dyn.spawn(busy.Agent, "b");
    void rt.send("b", {});
    await until(busy.entered, "the handler entered", 1000, 2);
    const halt = rt.ask("b", {}, { type: "civitas.eval.halt", timeoutMs: 5000 });
    const despawn = dyn.despawn("b");
    busy.release.open();
    await despawn;
    const result = await outcome(halt, 300);
    expect(result, "the ask is silently dropped when the mailbox closes").not.toBe("pending");
    expect(result !== "pending" && !result.ok && (result.error as { code?: string }).code).toBe("MAILBOX_CLOSED");
  });
});

describe("an ask queued in the mailbox of an agent that then stops for good", () => {
  // docs/supervision.md "Normal exits are not restarted": "its mailbox is closed: sends and asks to it
  // reject with MAILBOX_CLOSED". ProcessRunner.close() fails the *control* requests still queued
  // ("Nobody will answer control requests still waiting here: fail them rather than leave callers
  // hanging") but drops queued business asks silently: their callers wait out the whole timeoutMs
  // (30 s by default) for an agent that is gone.
  it.each([
    { how: "the agent halts (civitas.eval.halt)", held: { hold: true }, halt: true },
    { how: "onError returns STOP", held: { hold: true, stop: true }, halt: false },
  ])("rejects with MAILBOX_CLOSED when $how, instead of waiting out timeoutMs", async ({ held, halt }) => {
    const worker = new Gate("worker");
    const rt = await whenStarted(supervised([worker]));
    void rt.send("worker", held);
    await sleep(10);
    const asked = settlement(rt.ask("worker", {}, { timeoutMs: 5_000 }), 2_000); // queued behind the held message
    if (halt) await rt.send("worker", {}, { type: "civitas.eval.halt" }); // priority lane: acted on right after the held message
    worker.release();
    await sleep(50);
    expect(worker.status).toBe("STOPPED");
    expect(await asked).toBe("MAILBOX_CLOSED");
  });

  it("rejects (not a silent 30 s wait) when a dynamic child is despawned with an ask queued", async () => {
    const workers = new DynamicSupervisor("workers");
    const rt = await whenStarted(supervised([workers]));
    const worker = await workers.spawn(Gate, "w1");
    void rt.send("w1", { hold: true });
    await sleep(10);
    const asked = settlement(rt.ask("w1", {}, { timeoutMs: 5_000 }), 2_000);
    const despawned = workers.despawn("w1");
    worker.release();
    await despawned;
    expect(rt.getAgent("w1")).toBeUndefined();
    expect(await asked).toBe("MAILBOX_CLOSED");
  });
});

describe("an agent that stops itself for good", () => {
  it("an ask already queued when the agent stops itself (ErrorAction.STOP) fails at once, like one still waiting for room", async () => {
    const fatal = rendezvous();
    class Stopper extends AgentProcess {
      override async handle(message: Message): Promise<Message | void> {
        if (message.payload.id === "fatal") {
          await fatal.hold();
          throw new Error("unrecoverable");
        }
        return this.reply({ ok: true });
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.STOP;
      }
    }
    const rt = await whenStarted(runtime(new Supervisor("root", { children: [new Stopper("stopper", { mailboxSize: 1 })] })));
    await rt.send("stopper", { id: "fatal" });
    await fatal.entered.promise;
    const queued = rt.ask("stopper", { id: "queued" }, { timeoutMs: 5000 }); // takes the one slot
    const waiting = rt.ask("stopper", { id: "waiting" }, { timeoutMs: 5000 }); // waits for room
    fatal.proceed.open();
    const waitingOutcome = await outcome(waiting, 1000);
    // The ask that was still waiting for room is told MAILBOX_CLOSED at once ...
    expect(waitingOutcome !== "pending" && !waitingOutcome.ok && codeOf(waitingOutcome.error)).toBe("MAILBOX_CLOSED");
    // ... but the one that got in first is left hanging until its timeout: nobody will ever take it.
    const queuedOutcome = await outcome(queued, 1000);
    expect(queuedOutcome).not.toBe("pending");
  });
});
