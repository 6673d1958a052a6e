/**
 * Messages returned from handle() and replies: checked like sent ones, routed
 * by correlation id, never handled by an agent that may not take them.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, createMessage, ProcessStatus, type Message } from "civitas-ts";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually, turns } from "../runtime/fixtures.js";
import { sleep, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { codeOf } from "../support/outcome.js";
import { Sink, CodeReplier } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

describe("messages returned from handle()", () => {
  it("a malformed message returned from handle() is refused (logged), not delivered unchecked and not a supervised crash", async () => {
    class Forwarder extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        // objects that pass the supervised's isMessage() check (id and recipient are strings)
        return message.payload.typed === true
          ? ({ id: "not-a-uuid", recipient: "victim", type: "message", sender: "fwd", payload: { when: new Date(0) } } as unknown as Message)
          : ({ id: "not-a-uuid", recipient: "victim", payload: { n: 0 } } as unknown as Message);
      }
    }
    const fwd = new Forwarder("fwd");
    const victim = new Sink("victim");
    const rt = await whenStarted(supervised([fwd, victim]));
    await rt.send("fwd", { typed: false });
    await rt.send("fwd", { typed: true });
    await sleep(30);
    await rt.send("victim", { n: 1 });
    await until(() => victim.seen.some((m) => m.payload.n === 1));
    // the forwarder must not crash on an internal TypeError, the victim must not get a non-JSON payload
    expect({ fwdIncarnation: fwd.incarnation, victimGot: victim.seen.map((m) => m.payload) }).toEqual({ fwdIncarnation: 1, victimGot: [{ n: 1 }] });
  });

  it("a business message given priority 1 and returned from handle() is not handled by a SUSPENDED agent", async () => {
    class Pusher extends AgentProcess {
      override async handle(): Promise<Message> {
        return createMessage({ sender: this.name, recipient: "paused", type: "pay", payload: { amount: 100 }, priority: 1 });
      }
    }
    const paused = new Sink("paused");
    const rt = await whenStarted(supervised([new Pusher("pusher"), paused]));
    await rt.suspend("paused", "needs approval");
    expect(paused.status).toBe(ProcessStatus.SUSPENDED);
    await rt.send("pusher", {});
    await sleep(50);
    // SPEC §5 S3: while SUSPENDED only control messages are taken; business work waits for the approver
    expect(paused.seen.map((m) => m.type)).toEqual([]);
  });
});

describe("request/reply, reply() and returned messages", () => {
  it("broadcast with an empty type is refused even when nobody matches", async () => {
    const doer = new CodeReplier("doer");
    const rt = await whenStarted(supervised([doer]));
    doer.fn = async (self) => self.broadcast("nobody-*", { n: 1 }, { type: "" });
    expect((await rt.ask("doer", {})).payload.code).toBe("INVALID_ARGUMENT");
  });

  it("reply() after an abandoned handler finished still throws outside handle()", async () => {
    let release!: () => void;
    const gateP = new Promise<void>((r) => (release = r));
    let finished = false;
    class Hang extends AgentProcess {
      override async handle(): Promise<void> {
        await gateP;
        finished = true;
      }
    }
    const agent = new Hang("hang", { shutdownTimeoutMs: 20 });
    const rt = await whenStarted(supervised([agent]));
    await rt.send("hang", {});
    await turns();
    await rt.stop();
    release();
    await eventually(() => finished);
    await turns();
    let code = "no throw";
    try {
      agent.reply({});
    } catch (e) {
      code = codeOf(e);
    }
    expect(code).toBe("INVALID_ARGUMENT");
  });

  /** Returns, for each message, a hand-built message to "b" with `field` set to null (which the envelope check accepts as absent). */
  class Maker extends AgentProcess {
    constructor(name: string, private readonly clock: TestClock) {
      super(name);
    }
    override async handle(message: Message): Promise<Message> {
      const base = createMessage({ sender: this.name, recipient: "b", payload: { n: message.payload.n ?? null }, timestamp: this.clock.now() });
      return { ...base, [String(message.payload.field)]: null };
    }
  }

  it("a returned message with ttlMs: null (accepted as no TTL) is handled, not discarded as expired", async () => {
    const clock = new TestClock();
    const b = new Sink("b");
    const rt = supervised([new Maker("maker", clock), b], { clock });
    const expired: Message[] = [];
    rt.on("message.expired", (m) => expired.push(m));
    await rt.start();
    await rt.suspend("b", "hold"); // keeps it queued while time passes
    await rt.send("maker", { n: 1, field: "ttlMs" });
    await turns(10);
    await clock.advance(5);
    await rt.resume("b", "boss");
    await turns(10);
    expect(expired.length).toBe(0);
    expect(b.seen.map((m) => m.payload.n)).toEqual([1]);
  });

  it("a returned message with correlationId: null (accepted as absent) is delivered, not dropped as a late reply", async () => {
    const clock = new TestClock();
    const b = new Sink("b");
    const rt = await whenStarted(supervised([new Maker("maker", clock), b], { clock }));
    await rt.send("maker", { n: 2, field: "correlationId" });
    await turns(10);
    expect(rt.lateReplies).toBe(0);
    expect(b.seen.map((m) => m.payload.n)).toEqual([2]);
  });
});
