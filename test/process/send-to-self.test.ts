/**
 * An agent sending to itself (from handle(), its hooks or its timers) never
 * deadlocks on its own full mailbox: it is refused with MAILBOX_FULL or
 * queued, as docs/messaging.md says.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, Supervisor, type Message, createMessage } from "../../src/index.js";
import { codeOf, outcome } from "../support/outcome.js";
import { gate } from "../support/agents.js";
import { runtimes, sleep, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { CodeReplier } from "../support/probe-agents.js";

const runtime = runtimes();

const supervised = supervisedRuntimes();

describe("an agent messaging itself from a hook its own loop runs", () => {
  it("a send to itself from onError with its own mailbox full does not hang the agent", async () => {
    const seen: string[] = [];
    let selfSend: Promise<void> | undefined;
    const entered = gate();
    const proceed = gate();
    class Failing extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        seen.push(String(message.payload.id));
        if (message.payload.id === "bad") throw new Error("boom");
      }
      override async onError(): Promise<ErrorAction> {
        entered.open();
        await proceed.promise;
        selfSend = this.send(this.name, { id: "dead-letter" });
        await selfSend.catch(() => undefined);
        return ErrorAction.SKIP;
      }
    }
    const rt = await whenStarted(runtime(new Supervisor("root", { children: [new Failing("f", { mailboxSize: 1, shutdownTimeoutMs: 100 })] })));
    await rt.send("f", { id: "bad" });
    await entered.promise;
    await rt.send("f", { id: "queued" }); // the one business slot is now taken
    proceed.open();
    await until(() => selfSend !== undefined);
    // Only the loop that is awaiting onError could make room: waiting is a deadlock.
    const result = await outcome(selfSend as unknown as Promise<void>, 500);
    expect(result).not.toBe("pending");
    await until(() => seen.includes("queued"), "the queued message handled", 1000);
  });

  it("a send to itself from onStart with its own mailbox full does not hang the start", async () => {
    class Init extends AgentProcess {
      override async onStart(): Promise<void> {
        await this.send(this.name, { id: "init" }).catch(() => undefined);
      }
    }
    const agent = new Init("init", { mailboxSize: 1, shutdownTimeoutMs: 100 });
    const rt = runtime(new Supervisor("root", { children: [agent] }));
    // Calls made while start() runs wait in the mailbox until the agent runs: sent at once, it is full before onStart runs.
    const starting = rt.start();
    await rt.send("init", { id: "early" });
    const started = await outcome(starting, 1000);
    expect(started).not.toBe("pending");
  });
});

describe("a send to itself from a timer of the agent", () => {
  it("is refused with MAILBOX_FULL while its loop is busy and the lane full (docs/messaging.md: indistinguishable from its own code), and waits for room when the loop is idle", async () => {
    const entered = gate();
    const proceed = gate();
    const seen: string[] = [];
    class Ticker extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        seen.push(String(message.payload.id));
        if (message.payload.id === "slow") {
          entered.open();
          await proceed.promise;
        }
      }
    }
    const agent = new Ticker("ticker", { mailboxSize: 1 });
    const rt = await whenStarted(runtime(new Supervisor("root", { children: [agent] })));
    await rt.send("ticker", { id: "slow" });
    await entered.promise;
    await rt.send("ticker", { id: "queued" }); // the lane is full
    const tick = await new Promise<{ sent: Promise<void> }>((resolve) => setTimeout(() => resolve({ sent: agent.send(agent.name, { id: "tick" }) }), 1));
    const busy = await outcome(tick.sent, 50);
    expect(busy === "pending" ? "pending" : busy.ok ? "resolved" : codeOf(busy.error)).toBe("MAILBOX_FULL");
    proceed.open();
    await until(() => seen.length === 2 && agent.mailbox.size === 0 && !agent.mailbox.closed, "both handled", 1000);
    await sleep(5); // the loop parks
    // idle now: a send from a timer is an ordinary send
    const idle = await new Promise<{ sent: Promise<void> }>((resolve) => setTimeout(() => resolve({ sent: agent.send(agent.name, { id: "tick" }) }), 1));
    await idle.sent;
    await until(() => seen.length === 3, "the tick handled", 1000);
    expect(seen).toEqual(["slow", "queued", "tick"]);
  });
});

describe("an agent messaging itself", () => {
  /** Handles `first` by waiting at a gate, then messaging itself; records what it handles. */
  function loopback(how: "send" | "return"): { agent: AgentProcess; seen: string[]; release: () => void; selfSend: () => Promise<void> | undefined } {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: string[] = [];
    let selfSend: Promise<void> | undefined;
    class Loopback extends AgentProcess {
      override async handle(message: Message): Promise<Message | void> {
        seen.push(String(message.payload.id));
        if (message.payload.id !== "first") return;
        await gate;
        if (how === "return") return createMessage({ sender: this.name, recipient: this.name, payload: { id: "returned" } });
        selfSend = this.send(this.name, { id: "self" });
        await selfSend.catch(() => undefined);
      }
    }
    return { agent: new Loopback("loop", { mailboxSize: 1, shutdownTimeoutMs: 100 }), seen, release: () => release(), selfSend: () => selfSend };
  }

  it("a send to itself from handle() with its own mailbox full is refused with MAILBOX_FULL instead of waiting forever", async () => {
    const { agent, seen, release, selfSend } = loopback("send");
    const rt = await whenStarted(supervised([agent]));
    await rt.send("loop", { id: "first" });
    await until(() => seen.length === 1);
    await rt.send("loop", { id: "queued" }); // the one business slot is now taken
    release();
    await until(() => selfSend() !== undefined);
    const result = await outcome(selfSend() as Promise<void>, 300);
    expect(result !== "pending" && !result.ok && codeOf(result.error)).toBe("MAILBOX_FULL");
    await until(() => seen.length === 2);
    expect(seen).toEqual(["first", "queued"]);
  });

  it("a message handle() returns to its own agent is queued even past a full lane, and handled", async () => {
    const { agent, seen, release } = loopback("return");
    const rt = await whenStarted(supervised([agent]));
    await rt.send("loop", { id: "first" });
    await until(() => seen.length === 1);
    await rt.send("loop", { id: "queued" });
    release();
    await until(() => seen.length === 3);
    expect(seen).toEqual(["first", "queued", "returned"]);
  });

  it("a send to itself with room in its mailbox is delivered as usual", async () => {
    const seen: number[] = [];
    class Counter extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        const n = message.payload.n as number;
        seen.push(n);
        if (n < 3) await this.send(this.name, { n: n + 1 });
      }
    }
    const rt = await whenStarted(supervised([new Counter("counter", { mailboxSize: 1 })]));
    await rt.send("counter", { n: 1 });
    await until(() => seen.length === 3);
    expect(seen).toEqual([1, 2, 3]);
  });
});

describe("send to itself with an aborted signal", () => {
  it("a send to itself from handle() with an already aborted signal rejects and enqueues nothing", async () => {
    const doer = new CodeReplier("doer");
    const rt = await whenStarted(supervised([doer]));
    let size = -1;
    doer.fn = async (self) => {
      try {
        await self.send("doer", { again: true }, { signal: AbortSignal.abort(new Error("no")) });
        return { sent: true };
      } finally {
        size = self.mailbox.size;
      }
    };
    const reply = await rt.ask("doer", {});
    expect(reply.payload.ok).toBe(false);
    expect(size).toBe(0);
  });
});
