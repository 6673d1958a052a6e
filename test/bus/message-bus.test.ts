import { getEventListeners } from "node:events";
import { EventEmitter } from "eventemitter3";
import { MessageBus } from "../../src/bus/message-bus.js";
import { Registry } from "../../src/bus/registry.js";
import { buildMessage } from "../../src/message/message.js";
import type { RuntimeEvents } from "../../src/contracts/runtime-events.js";
import { describe, expect, it } from "vitest";
import {
  AgentNotFoundError,
  AgentProcess,
  AskTimeoutError,
  RuntimeStateError,
  Supervisor,
  type Message,
  type Runtime,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { Echo, eventually, Silent, turns } from "../runtime/fixtures.js";
import { gate, type Gate } from "../support/agents.js";
import { rejection, rejectsWithCode, track } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const built = runtimes({ stop: "full" });

function runtime(children: AgentProcess[], clock?: TestClock): Runtime {
  return built(new Supervisor("root", { children }), clock === undefined ? {} : { clock });
}

/** Replies to each message only after the test opens that message's gate. */
class Slow extends AgentProcess {
  readonly gates: Gate[] = [];
  readonly started: Message[] = [];
  override async handle(message: Message): Promise<Message> {
    const g = gate();
    this.gates.push(g);
    this.started.push(message);
    await g.promise;
    return this.reply({ n: message.payload.n ?? null });
  }
}

describe("MessageBus routing", () => {
  it("rejects sends and asks to unknown recipients with AGENT_NOT_FOUND", async () => {
    const rt = await whenStarted(runtime([new Echo("echo")]));
    const sent = await rejectsWithCode(rt.send("nobody", { x: 1 }), "AGENT_NOT_FOUND");
    expect(sent).toBeInstanceOf(AgentNotFoundError);
    expect((sent as AgentNotFoundError).agent).toBe("nobody");
    expect(sent.message).toContain("'nobody'");
    const asked = await rejectsWithCode(rt.ask("nobody", { x: 1 }, { timeoutMs: 1_000 }), "AGENT_NOT_FOUND");
    expect((asked as AgentNotFoundError).agent).toBe("nobody");
  });

  it("rejects an agent's send, ask and sendCapable to unknown recipients with AGENT_NOT_FOUND", async () => {
    const codes: Record<string, unknown> = {};
    class Sender extends AgentProcess {
      override async handle(): Promise<void> {
        codes.send = await this.send("ghost", {}).catch((e: { code?: string }) => e.code);
        codes.ask = await this.ask("ghost", {}, { timeoutMs: 1_000 }).catch((e: { code?: string }) => e.code);
        codes.sendCapable = await this.sendCapable("haunting", {}).catch((e: { code?: string }) => e.code);
      }
    }
    const rt = await whenStarted(runtime([new Sender("sender")]));
    await rt.send("sender", {});
    await eventually(() => Object.keys(codes).length === 3, "the sender to try all three");
    expect(codes).toEqual({ send: "AGENT_NOT_FOUND", ask: "AGENT_NOT_FOUND", sendCapable: "AGENT_NOT_FOUND" });
  });
});

describe("MessageBus request/reply", () => {
  it("pairs concurrent asks with their own replies", async () => {
    const echoes = [new Echo("echo-1"), new Echo("echo-2"), new Echo("echo-3")];
    const rt = await whenStarted(runtime(echoes));
    const asks = Array.from({ length: 30 }, (_, i) => rt.ask(`echo-${(i % 3) + 1}`, { i }, { timeoutMs: 5_000 }));
    const replies = await Promise.all(asks);
    replies.forEach((reply, i) => {
      expect(reply.payload).toEqual({ i, from: `echo-${(i % 3) + 1}` });
      expect(reply.type).toBe("reply");
      expect(reply.recipient).toBe("_runtime");
    });
    const correlationIds = new Set(replies.map((r) => r.correlationId));
    expect(correlationIds.size).toBe(30);
    expect(rt.lateReplies).toBe(0);
  });

  it("pairs replies that arrive out of order", async () => {
    const slow = new Slow("slow");
    const rt = await whenStarted(runtime([slow, new Echo("fast")]));
    const first = track(rt.ask("slow", { n: 1 }, { timeoutMs: 5_000 }));
    await eventually(() => slow.gates.length === 1, "slow to take the ask");
    const second = await rt.ask("fast", { n: 2 }, { timeoutMs: 5_000 });
    expect(second.payload).toEqual({ n: 2, from: "fast" });
    expect(first.state).toBe("pending");
    slow.gates[0]?.open();
    expect((await first.promise).payload).toEqual({ n: 1 });
  });

  it("lets an agent ask another agent from inside handle", async () => {
    const answers: unknown[] = [];
    class Asker extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        const reply = await this.ask("echo", { q: message.payload.q ?? null }, { timeoutMs: 5_000 });
        answers.push(reply.payload);
        return this.reply({ relayed: reply.payload });
      }
    }
    const rt = await whenStarted(runtime([new Asker("asker"), new Echo("echo")]));
    const reply = await rt.ask("asker", { q: "why" }, { timeoutMs: 5_000 });
    expect(reply.payload).toEqual({ relayed: { q: "why", from: "echo" } });
    expect(answers).toEqual([{ q: "why", from: "echo" }]);
  });

  it("drops a reply that arrives after its ask timed out, counts it, reports it, and never hands it to the next ask", async () => {
    const clock = new TestClock();
    const slow = new Slow("slow");
    const rt = runtime([slow], clock);
    const late: Message[] = [];
    rt.on("reply.late", (m) => late.push(m));
    await rt.start();

    const first = track(rt.ask("slow", { n: 1 }, { timeoutMs: 50 }));
    const second = track(rt.ask("slow", { n: 2 }, { timeoutMs: 10_000 }));
    await eventually(() => slow.gates.length === 1, "slow to take the first ask");

    await clock.advance(50);
    expect(first.state).toBe("rejected");
    expect(first.reason).toBeInstanceOf(AskTimeoutError);
    expect(second.state).toBe("pending");

    // the reply to the first ask arrives late
    slow.gates[0]?.open();
    await eventually(() => late.length === 1, "the late reply to be reported");
    expect(rt.lateReplies).toBe(1);
    expect(late[0]?.payload).toEqual({ n: 1 });
    expect(late[0]?.sender).toBe("slow");
    await turns();
    // the late reply did not settle the second ask
    expect(second.state).toBe("pending");

    await eventually(() => slow.gates.length === 2, "slow to take the second ask");
    slow.gates[1]?.open();
    const reply = await second.promise;
    expect(reply.payload).toEqual({ n: 2 });
    expect(rt.lateReplies).toBe(1);
    expect(late).toHaveLength(1);
  });

  it("drops a late reply to an agent's ask instead of delivering it to the asking agent's mailbox", async () => {
    const clock = new TestClock();
    const slow = new Slow("slow");
    const seen: string[] = [];
    const outcomes: unknown[] = [];
    class Asker extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        seen.push(message.type);
        if (message.type === "go") {
          outcomes.push(await this.ask("slow", { n: 7 }, { timeoutMs: 30 }).catch((e: { code?: string }) => e.code));
        }
      }
    }
    const rt = await whenStarted(runtime([new Asker("asker"), slow], clock));
    await rt.send("asker", {}, { type: "go" });
    await eventually(() => slow.gates.length === 1, "slow to take the ask");
    await clock.advance(30);
    await eventually(() => outcomes.length === 1, "the ask to time out");
    expect(outcomes).toEqual(["ASK_TIMEOUT"]);
    slow.gates[0]?.open();
    await eventually(() => rt.lateReplies === 1, "the late reply to be counted");
    await rt.send("asker", {}, { type: "after" });
    await eventually(() => seen.includes("after"), "asker to handle the next message");
    expect(seen).toEqual(["go", "after"]);
  });
});

describe("MessageBus timeouts and cancellation", () => {
  it("rejects with AskTimeoutError carrying agent and timeoutMs, with the awaiting callers in its stack", async () => {
    const clock = new TestClock();
    const rt = await whenStarted(runtime([new Silent("silent")], clock));
    async function askTheSilentAgent(): Promise<Message> {
      return await rt.ask("silent", { hello: true }, { timeoutMs: 25 });
    }
    async function handleTheRequest(): Promise<Message> {
      return await askTheSilentAgent();
    }
    const pending = rejection(handleTheRequest());
    await clock.advance(24);
    await clock.advance(1);
    const error = await pending;
    expect(error).toBeInstanceOf(AskTimeoutError);
    const timeout = error as AskTimeoutError;
    expect(timeout.code).toBe("ASK_TIMEOUT");
    expect(timeout.name).toBe("AskTimeoutError");
    expect(timeout.agent).toBe("silent");
    expect(timeout.timeoutMs).toBe(25);
    expect(timeout.message).toContain("'silent'");
    expect(timeout.stack).toContain("askTheSilentAgent");
    expect(timeout.stack).toContain("handleTheRequest");
  });

  it("does not time out before timeoutMs has elapsed", async () => {
    const clock = new TestClock();
    const rt = await whenStarted(runtime([new Silent("silent")], clock));
    const ask = track(rt.ask("silent", {}, { timeoutMs: 100 }));
    await clock.advance(99);
    expect(ask.state).toBe("pending");
    await clock.advance(1);
    expect(ask.state).toBe("rejected");
  });

  it("puts the awaiting caller of an agent's ask in the timeout's stack", async () => {
    const clock = new TestClock();
    const stacks: (string | undefined)[] = [];
    async function consultTheOracle(agent: AgentProcess): Promise<Message> {
      return await agent.ask("silent", {}, { timeoutMs: 10 });
    }
    class Asker extends AgentProcess {
      override async handle(): Promise<void> {
        const error = await rejection(consultTheOracle(this));
        stacks.push(error instanceof AskTimeoutError ? error.stack : "not an AskTimeoutError");
      }
    }
    const rt = await whenStarted(runtime([new Asker("asker"), new Silent("silent")], clock));
    await rt.send("asker", {});
    await eventually(() => clock.pendingTimers > 0, "the ask to arm its timer");
    await clock.advance(10);
    await eventually(() => stacks.length === 1, "the ask to time out");
    expect(stacks[0]).toContain("consultTheOracle");
  });

  it("rejects with the signal's reason when the ask is aborted, and removes its listener", async () => {
    const rt = await whenStarted(runtime([new Silent("silent")]));
    const controller = new AbortController();
    const reason = new Error("the user gave up");
    const ask = rejection(rt.ask("silent", {}, { timeoutMs: 60_000, signal: controller.signal }));
    await turns();
    controller.abort(reason);
    expect(await ask).toBe(reason);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects with the default AbortError reason when aborted without one", async () => {
    const rt = await whenStarted(runtime([new Silent("silent")]));
    const controller = new AbortController();
    const ask = rejection(rt.ask("silent", {}, { timeoutMs: 60_000, signal: controller.signal }));
    controller.abort();
    const error = await ask;
    expect(error).toBe(controller.signal.reason);
    expect((error as Error).name).toBe("AbortError");
  });

  it("rejects an already-aborted ask without enqueuing anything", async () => {
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime([silent]));
    const reason = new Error("too late");
    expect(await rejection(rt.ask("silent", {}, { signal: AbortSignal.abort(reason) }))).toBe(reason);
    // the next message is the first one handled: the aborted ask was never enqueued
    await rt.send("silent", { n: 1 });
    await eventually(() => silent.handled.length > 0, "the send to be handled");
    expect(silent.handled.map((m) => m.payload)).toEqual([{ n: 1 }]);
  });

  it("removes the abort listener once the ask is answered or timed out", async () => {
    const clock = new TestClock();
    const rt = await whenStarted(runtime([new Echo("echo"), new Silent("silent")], clock));
    const controller = new AbortController();
    await rt.ask("echo", {}, { signal: controller.signal });
    const timedOut = rejection(rt.ask("silent", {}, { signal: controller.signal, timeoutMs: 5 }));
    await clock.advance(5);
    expect(await timedOut).toBeInstanceOf(AskTimeoutError);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects pending asks with RUNTIME_STOPPED when the runtime stops, and refuses new ones", async () => {
    const rt = await whenStarted(runtime([new Silent("silent")]));
    const pending = rejection(rt.ask("silent", {}, { timeoutMs: 60_000 }));
    const pending2 = rejection(rt.ask("silent", {}, { timeoutMs: 60_000 }));
    await rt.stop();
    for (const error of [await pending, await pending2]) {
      expect(error).toBeInstanceOf(RuntimeStateError);
      expect((error as RuntimeStateError).code).toBe("RUNTIME_STOPPED");
    }
    await rejectsWithCode(rt.ask("silent", {}, { timeoutMs: 60_000 }), "RUNTIME_STOPPED");
  });

  it("reports a late reply through the event even when nothing else is waiting", async () => {
    const clock = new TestClock();
    const slow = new Slow("slow");
    const rt = runtime([slow], clock);
    const events: string[] = [];
    rt.on("reply.late", (m) => events.push(String(m.correlationId)));
    await rt.start();
    const ask = rejection(rt.ask("slow", { n: 3 }, { timeoutMs: 1 }));
    await eventually(() => slow.gates.length === 1, "slow to take the ask");
    await clock.advance(1);
    await ask;
    slow.gates[0]?.open();
    await eventually(() => events.length === 1, "the late reply event");
    expect(events[0]).toBe(slow.started[0]?.correlationId);
    expect(rt.lateReplies).toBe(1);
  });
});

describe("MessageBus.deliver", () => {
  it("reports a throwing reply.late listener by rejecting, never by throwing synchronously", async () => {
    const events = new EventEmitter<RuntimeEvents>();
    events.on("reply.late", () => {
      throw new Error("listener broke");
    });
    const bus = new MessageBus(new Registry(), new TestClock(), events);
    const stray = buildMessage({ sender: "x", recipient: "_runtime", correlationId: "no-such-ask", payload: {} });
    let delivery: Promise<void> | undefined;
    expect(() => (delivery = bus.deliver(stray))).not.toThrow();
    expect(((await rejection(delivery as Promise<void>)) as Error).message).toBe("listener broke");
    expect(bus.lateReplies).toBe(1);
  });

  it("rejects (does not throw) for an unknown recipient", async () => {
    const bus = new MessageBus(new Registry(), new TestClock(), new EventEmitter<RuntimeEvents>());
    let delivery: Promise<void> | undefined;
    expect(() => (delivery = bus.deliver(buildMessage({ sender: "x", recipient: "ghost", payload: {} })))).not.toThrow();
    await rejectsWithCode(delivery as Promise<void>, "AGENT_NOT_FOUND");
  });
});
