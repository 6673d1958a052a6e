/**
 * A handler or hook a stop gave up on (abandoned) cannot act on the next
 * incarnation: not through its onError, what it returns, or what it sends.
 *
 * Each test pins a defect found by the second review of the message loop and
 * lifecycle (these tests were in test/review/loop2-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import { AgentProcess, createMessage, ErrorAction, ProcessStatus, Supervisor, type Message } from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually } from "../runtime/fixtures.js";
import { Probe, gate, turns, waitUntil } from "../support/agents.js";
import { rig, teardown } from "./suspension/helpers.js";
import { runtimes, whenStarted } from "../support/runtimes.js";
import { Crasher } from "../support/probe-agents.js";

const runtime = runtimes();

const realTurn = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

/** Advances the TestClock in steps (letting real turns run) until `done()` or `steps` run out. */
async function advanceUntil(clock: TestClock, done: () => boolean, stepMs = 100, steps = 50): Promise<void> {
  for (let i = 0; i < steps && !done(); i++) {
    await clock.advance(stepMs);
    await realTurn();
  }
}

describe("an onError that outlives its incarnation", () => {
  for (const action of [ErrorAction.ESCALATE, ErrorAction.STOP]) {
    it(`an onError still running when a stop gave up on it cannot ${action} the restarted incarnation`, async () => {
      const clock = new TestClock();
      const decide = gate();
      let onErrorCalls = 0;
      class SlowDecider extends AgentProcess {
        override async handle(message: Message): Promise<void> {
          if (message.payload.fail === true) throw new Error("boom");
        }
        override async onError(): Promise<ErrorAction> {
          onErrorCalls++;
          await decide.promise;
          return action;
        }
      }
      const slow = new SlowDecider("slow", { shutdownTimeoutMs: 100 });
      const statuses: string[] = [];
      const rt = runtime(new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, maxRestarts: 10, children: [slow, new Crasher("crasher")] }), { clock });
      rt.on("agent.status", (name: string, from: string, to: string) => {
        if (name === "slow") statuses.push(`${from}->${to}`);
      });
      await rt.start();
      await rt.send("slow", { fail: true });
      await eventually(() => onErrorCalls === 1, "onError entered");
      // the sibling's crash makes the supervisor stop 'slow' (stuck in onError): it gives up after 100 ms and restarts it
      await rt.send("crasher", {});
      await advanceUntil(clock, () => slow.incarnation >= 2 && slow.status === ProcessStatus.RUNNING);
      expect(slow.incarnation).toBe(2);
      expect(slow.status).toBe(ProcessStatus.RUNNING);
      const before = statuses.length;
      decide.open(); // the abandoned onError of incarnation 1 answers now
      for (let i = 0; i < 20; i++) await realTurn();
      // docs/supervision.md: an abandoned handler's "failure is not handled"; incarnation 2 never failed anything
      expect(statuses.slice(before)).toEqual([]);
      expect(slow.status).toBe(ProcessStatus.RUNNING);
      expect(slow.incarnation).toBe(2);
    });
  }
});

describe("a result blocked on a full recipient when the stop gives up", () => {
  it("a restarted agent is not held up by the delivery of what its abandoned incarnation returned", async () => {
    const clock = new TestClock();
    const hold = gate();
    class Hung extends AgentProcess {
      override async handle(): Promise<void> {
        await hold.promise;
      }
    }
    class Forwarder extends AgentProcess {
      readonly seen: string[] = [];
      override async handle(m: Message): Promise<Message | void> {
        this.seen.push(`${String(m.payload.op)}@${this.incarnation}`);
        if (m.payload.op === "forward") return createMessage({ sender: this.name, recipient: "hung", payload: { from: "fwd" } });
        if (m.payload.op === "ping") return this.reply({ pong: this.incarnation });
      }
    }
    const hung = new Hung("hung", { mailboxSize: 1 });
    const fwd = new Forwarder("fwd", { shutdownTimeoutMs: 100 });
    const inner = new Supervisor("inner", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, maxRestarts: 10, children: [fwd, new Crasher("crasher")] });
    const rt = await whenStarted(runtime(new Supervisor("root", { backoffBaseMs: 0, children: [hung, inner] }), { clock }));
    await rt.send("hung", { n: 1 }); // taken; its handler hangs
    await eventually(() => hung.mailbox.size === 0, "hung took its message");
    await rt.send("hung", { n: 2 }); // fills hung's business lane
    await rt.send("fwd", { op: "forward" }); // fwd's loop now waits for room in hung's mailbox
    await eventually(() => fwd.seen.length === 1, "fwd handled forward");
    await rt.send("crasher", {});
    await advanceUntil(clock, () => fwd.incarnation >= 2 && fwd.status === ProcessStatus.RUNNING);
    expect(fwd.incarnation).toBe(2);
    const pong = rt.ask("fwd", { op: "ping" }, { timeoutMs: 1000 }).catch((error: unknown) => error);
    await advanceUntil(clock, () => fwd.seen.length === 2, 100, 15);
    const reply = await pong;
    hold.open();
    // docs/supervision.md: what an abandoned incarnation returns "is dropped"; the new one waits only for a handle() still running
    expect(fwd.seen).toEqual(["forward@1", "ping@2"]);
    expect((reply as Message).payload).toEqual({ pong: 2 });
  });
});

afterEach(teardown);

const S = ProcessStatus;

/** Its "hang" handler waits, then notes something to itself; everything else is recorded. */
class HangsThenNotesItself extends AgentProcess {
  readonly hang = gate();
  readonly handled: number[] = [];
  hanging = false;
  selfSend = "pending";
  override async handle(message: Message): Promise<void> {
    if (message.payload.op === "hang") {
      this.hanging = true;
      await this.hang.promise;
      try {
        await this.send(this.name, { seq: 99 });
        this.selfSend = "sent";
      } catch (error) {
        this.selfSend = String((error as { code?: unknown }).code ?? error);
      }
      return;
    }
    this.handled.push(message.payload.seq as number);
  }
}

describe("a handler the stop gave up on, sending to itself", () => {
  it("an abandoned handler that sends to itself into a full mailbox does not deadlock the restarted incarnation", async () => {
    const crasher = new Probe("c0");
    const agent = new HangsThenNotesItself("a", { mailboxSize: 2, shutdownTimeoutMs: 100 });
    const r = rig(new Supervisor("sup", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [crasher, agent] }));
    await r.runtime.start();
    await r.runtime.send("a", { op: "hang" });
    await waitUntil(() => agent.hanging, "a hanging");
    await r.runtime.send("c0", { op: "crash" }); // ONE_FOR_ALL: a is stopped too; its stop gives up after 100 ms
    for (let i = 0; i < 10 && !(agent.incarnation === 2 && agent.status === S.RUNNING); i++) {
      await r.clock.advance(100);
      await turns(5);
    }
    expect(agent.incarnation).toBe(2);
    // The restarted a dispatches nothing until the abandoned handle() returns (by design); its mailbox fills meanwhile.
    await r.runtime.send("a", { seq: 1 });
    await r.runtime.send("a", { seq: 2 });
    agent.hang.open();
    // Before this change the abandoned handler's send to itself got MAILBOX_FULL (current was still set);
    // now it waits for room only the loop waiting for that very handler can make.
    await waitUntil(() => agent.handled.length >= 2, "the restarted a handles its queue", 2_000).catch(() => undefined);
    expect(agent.selfSend).not.toBe("pending");
    expect(agent.handled.slice(0, 2)).toEqual([1, 2]);
  });
});
