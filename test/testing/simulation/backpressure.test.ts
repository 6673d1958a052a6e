import { describe, expect, it } from "vitest";
import type { MailboxOptions } from "../../../src/mailbox/mailbox-options.js";
import type { Message } from "../../../src/message/message.js";
import { AgentProcess } from "../../../src/process/agent-process.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import { failureOf } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

/** Sends `count` numbered `item`s to `to`, one after the other, from one handler. */
class Producer extends AgentProcess {
  constructor(
    name: string,
    private readonly to: string,
  ) {
    super(name);
  }

  override async handle(message: Message): Promise<void> {
    const { count } = message.payload as { count: number };
    for (let seq = 0; seq < count; seq++) await this.send(this.to, { from: this.name, seq }, { type: "item" });
  }
}

/** A mailbox of one message, and a handler that waits for a checkpoint (a store write the simulation schedules) per item. */
class SlowConsumer extends AgentProcess<{ seen: number }> {
  readonly seen: { from: string; seq: number }[] = [];

  constructor(name: string) {
    super(name, { mailboxSize: 1 });
  }

  override async handle(message: Message): Promise<void> {
    this.seen.push(message.payload as { from: string; seq: number });
    this.state.seen = this.seen.length;
    await this.checkpoint();
  }
}

/** Like {@link SlowConsumer}, but each item waits on a real timer: a promise the simulation does not control. */
class SleepyConsumer extends AgentProcess {
  constructor(name: string) {
    super(name, { mailboxSize: 1 });
  }

  override async handle(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** On `start`, sends `count` `flood`s to `peer`; both have a mailbox of one message. */
class Flooder extends AgentProcess {
  constructor(
    name: string,
    private readonly peer: string,
  ) {
    super(name, { mailboxSize: 1 });
  }

  override async handle(message: Message): Promise<void> {
    if (message.type === "start") for (let i = 0; i < 3; i++) await this.send(this.peer, { i }, { type: "flood" });
  }
}

describe("a send waiting for room in a full mailbox waits on the runtime", () => {
  it('is not an external await (externalAwaits: "fail" passes), and every item arrives, in order per sender, across seeds', async () => {
    for (let seed = 0; seed < 40; seed++) {
      const sim = simulate({
        root: () => new Supervisor("root", { children: [new SlowConsumer("slow"), new Producer("p1", "slow"), new Producer("p2", "slow")] }),
        seed,
        externalAwaits: "fail",
      });
      await sim.start();
      // Counts the puts that had to wait for room in slow's mailbox (the case this test is about), passing each
      // on to the simulation's hook, which the runtime injected into the mailbox.
      let waited = 0;
      const box = sim.view.agent<SlowConsumer>("slow").mailbox as unknown as { onPutWait: NonNullable<MailboxOptions["onPutWait"]> };
      const watch = box.onPutWait;
      box.onPutWait = (mailbox, put) => {
        waited++;
        watch(mailbox, put);
      };
      void sim.send("p1", "go", { count: 5 });
      void sim.send("p2", "go", { count: 4 });
      await sim.run();
      const seen = sim.view.agent<SlowConsumer>("slow").seen;
      expect(seen.filter((s) => s.from === "p1").map((s) => s.seq), `seed ${seed}`).toEqual([0, 1, 2, 3, 4]);
      expect(seen.filter((s) => s.from === "p2").map((s) => s.seq), `seed ${seed}`).toEqual([0, 1, 2, 3]);
      expect(sim.trace.some((s) => s.kind === "external-await")).toBe(false);
      expect(sim.view.agent<SlowConsumer>("slow").state.seen).toBe(9);
      expect(waited, `seed ${seed}`).toBeGreaterThan(0);
      await sim.stop();
    }
  });

  it("two agents each waiting for room in the other's full mailbox are a deadlock, reported with the waiting chain", async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const sim = await whenStarted(simulate({ root: () => new Supervisor("root", { children: [new Flooder("a", "b"), new Flooder("b", "a")] }), seed, externalAwaits: "fail" }));
      void sim.send("a", "start", {});
      void sim.send("b", "start", {});
      const failure = await failureOf(sim.run());
      expect(failure?.code, `seed ${seed}`).toBe("SIMULATION_DEADLOCK");
      expect(failure?.message).toMatch(
        /deadlock: nothing is ready and agents wait on each other: (a waits for room in b's mailbox \(flood\) -> b waits for room in a's mailbox \(flood\)|b waits for room in a's mailbox \(flood\) -> a waits for room in b's mailbox \(flood\))/,
      );
      await sim.stop();
    }
  });

  it("a handler awaiting a real timer is still reported, not the sender waiting for room behind it", async () => {
    const root = (): Supervisor => new Supervisor("root", { children: [new SleepyConsumer("sleepy"), new Producer("p1", "sleepy")] });
    const recorded = await whenStarted(simulate({ root, seed: 7 }));
    void recorded.send("p1", "go", { count: 3 });
    await recorded.run();
    const reported = recorded.trace.filter((s) => s.kind === "external-await");
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.every((s) => s.agent === "sleepy")).toBe(true);
    await recorded.stop();

    const failing = await whenStarted(simulate({ root, seed: 7, externalAwaits: "fail" }));
    void failing.send("p1", "go", { count: 3 });
    const failure = await failureOf(failing.run());
    expect(failure?.code).toBe("SIMULATION_EXTERNAL_AWAIT");
    expect(failure?.message).toContain("'sleepy' handling item awaits a promise the simulation does not control");
  });
});
