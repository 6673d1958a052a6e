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

describe("the reply reply() hands out", () => {
  type Edit = "at once" | "in a microtask" | "as getters";

  /** Replies to each ask, then edits the reply it returns: retargets it at `other`'s ask and changes its type and payload. */
  class Editor extends AgentProcess {
    constructor(
      name: string,
      private readonly edit: Edit,
      private readonly otherCorrelationId: () => string,
    ) {
      super(name);
    }
    override async handle(message: Message): Promise<Message> {
      const reply = this.reply({ n: Number(message.payload.n) + 1 }) as unknown as Record<string, unknown>;
      const changes: Record<string, unknown> = { correlationId: this.otherCorrelationId(), recipient: "other", type: "message", payload: { n: -1 } };
      const apply = (): void => {
        for (const [field, value] of Object.entries(changes)) {
          if (this.edit === "as getters") Object.defineProperty(reply, field, { get: () => value, enumerable: true, configurable: true });
          else reply[field] = value;
        }
      };
      if (this.edit === "in a microtask") queueMicrotask(apply);
      else apply();
      return reply as unknown as Message;
    }
  }

  for (const edit of ["at once", "in a microtask", "as getters"] as const) {
    it(`edited ${edit} after reply(), it still answers its own ask with what reply() was given, and no other ask`, async () => {
      const held = new Map<string, string>();
      const slow = new (class extends AgentProcess {
        override async handle(message: Message): Promise<void> {
          held.set("id", message.correlationId as string);
          await new Promise(() => undefined); // never answers: only a forged reply could settle this ask
        }
      })("other");
      const rt = await whenStarted(supervised([new Editor("editor", edit, () => held.get("id") ?? "none"), slow]));
      const other = rt.ask("other", {}, { timeoutMs: 200 });
      await until(() => held.has("id"));
      const answers = [];
      for (let n = 0; n < 3; n++) answers.push(await rt.ask("editor", { n }));
      expect(answers.map((a) => [a.type, a.payload, a.correlationId === held.get("id")])).toEqual([
        ["reply", { n: 1 }, false],
        ["reply", { n: 2 }, false],
        ["reply", { n: 3 }, false],
      ]);
      expect(codeOf(await other.then(() => undefined, (error: unknown) => error))).toBe("ASK_TIMEOUT");
    });
  }
});
