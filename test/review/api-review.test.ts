/**
 * Adversarial review of the messaging API as a new user meets it (README,
 * docs/messaging.md, examples): each test pins down a defect.
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ErrorAction, type Message } from "../../src/index.js";
import { settlement, sleep, supervisedRuntimes } from "../support/review-kit.js";

// a stop that fails fails the test (awaited in full)
const runtime = supervisedRuntimes({ stop: "full" });

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

describe("an ask queued in the mailbox of an agent that then stops for good", () => {
  // docs/supervision.md "Normal exits are not restarted": "its mailbox is closed: sends and asks to it
  // reject with MAILBOX_CLOSED". ProcessRunner.close() fails the *control* requests still queued
  // ("Nobody will answer control requests still waiting here: fail them rather than leave callers
  // hanging") but drops queued business asks silently: their callers wait out the whole timeoutMs
  // (30 s by default) for an agent that is gone.
  it("rejects with MAILBOX_CLOSED when the agent halts (civitas.eval.halt), instead of waiting out timeoutMs", async () => {
    const worker = new Gate("worker");
    const rt = runtime([worker]);
    await rt.start();
    void rt.send("worker", { hold: true });
    await sleep(10);
    const asked = settlement(rt.ask("worker", {}, { timeoutMs: 5_000 }), 2_000); // queued behind the held message
    await rt.send("worker", {}, { type: "civitas.eval.halt" }); // priority lane: acted on right after the held message
    worker.release();
    await sleep(50);
    expect(worker.status).toBe("STOPPED");
    expect(await asked).toBe("MAILBOX_CLOSED");
  });

  it("rejects with MAILBOX_CLOSED when onError returns STOP, instead of waiting out timeoutMs", async () => {
    const worker = new Gate("worker");
    const rt = runtime([worker]);
    await rt.start();
    void rt.send("worker", { hold: true, stop: true });
    await sleep(10);
    const asked = settlement(rt.ask("worker", {}, { timeoutMs: 5_000 }), 2_000);
    worker.release();
    await sleep(50);
    expect(worker.status).toBe("STOPPED");
    expect(await asked).toBe("MAILBOX_CLOSED");
  });

  it("rejects (not a silent 30 s wait) when a dynamic child is despawned with an ask queued", async () => {
    const workers = new DynamicSupervisor("workers");
    const rt = runtime([workers]);
    await rt.start();
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
