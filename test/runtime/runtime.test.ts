import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DuplicateNameError,
  DynamicSupervisor,
  PayloadNotSerializableError,
  ProcessStatus,
  ReservedMessageTypeError,
  Runtime,
  RuntimeStateError,
  silentLogger,
  Supervisor,
  SYSTEM_MESSAGE_TYPES,
  type JsonObject,
  type Message,
  type RuntimeOptions,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { Echo, eventually, Silent } from "./fixtures.js";
import { gate, type Gate } from "../support/agents.js";
import { rejectsWithCode, throwsWithCode, track } from "../support/outcome.js";
import { Lifecycle } from "../support/probe-agents.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const runtime = runtimes({ stop: "full" });

const RESERVED = SYSTEM_MESSAGE_TYPES.filter((t) => t.startsWith("_agency."));

/** Payloads that are not plain JSON objects. */
const BAD_PAYLOADS: [string, unknown][] = [
  ["a Date", { at: new Date(0) }],
  ["a function", { f: () => 1 }],
  ["NaN", { n: Number.NaN }],
  ["Infinity", { n: Number.POSITIVE_INFINITY }],
  ["a bigint", { n: 1n }],
  ["undefined", { u: undefined }],
  ["a Map", { m: new Map() }],
  ["a class instance", { e: new Error("x") }],
  ["a cycle", (() => {
    const o: Record<string, unknown> = {};
    o.self = o;
    return o;
  })()],
  ["an array", [1, 2]],
  ["a string", "text"],
  ["null", null],
];

describe("Runtime construction", () => {
  it("takes a Supervisor as the root as it is", () => {
    const agent = new Echo("echo");
    const root = new Supervisor("top", { children: [agent], strategy: "ONE_FOR_ALL" });
    const rt = runtime(root);
    expect(rt.root).toBe(root);
    expect(rt.getAgent("echo")).toBe(agent);
  });

  it("wraps a single AgentProcess in a ONE_FOR_ONE supervisor named root", () => {
    const agent = new Echo("echo");
    const rt = runtime(agent);
    expect(rt.root).toBeInstanceOf(Supervisor);
    const root = rt.root as Supervisor;
    expect(root.name).toBe("root");
    expect(root.strategy).toBe("ONE_FOR_ONE");
    expect(root.children).toEqual([agent]);
  });

  it("wraps an array of agents and supervisors in a supervisor named root, keeping their order", () => {
    const a = new Echo("a");
    const b = new Silent("b");
    const inner = new Supervisor("inner", { children: [new Echo("c")] });
    const rt = runtime([a, inner, b]);
    const root = rt.root as Supervisor;
    expect(root.name).toBe("root");
    expect(root.children).toEqual([a, inner, b]);
    expect(rt.agents().map((x) => x.name)).toEqual(["a", "c", "b"]);
  });

  it("returns agents by name from getAgent, and undefined for supervisors and unknown names", () => {
    const echo = new Echo("echo");
    const rt = runtime(new Supervisor("sup", { children: [echo, new DynamicSupervisor("pool")] }));
    expect(rt.getAgent("echo")).toBe(echo);
    expect(rt.getAgent("sup")).toBeUndefined();
    expect(rt.getAgent("pool")).toBeUndefined();
    expect(rt.getAgent("ghost")).toBeUndefined();
  });

  it("refuses a missing or wrong root with INVALID_ARGUMENT", () => {
    throwsWithCode(() => new Runtime(undefined as unknown as RuntimeOptions), "INVALID_ARGUMENT");
    throwsWithCode(() => new Runtime({ root: 42 as unknown as Supervisor, logger: silentLogger }), "INVALID_ARGUMENT");
    throwsWithCode(() => new Runtime({ root: {} as unknown as Supervisor, logger: silentLogger }), "INVALID_ARGUMENT");
  });

  it("refuses duplicate names with DUPLICATE_NAME, across agents and supervisors", () => {
    const twice = throwsWithCode(() => new Runtime({ root: [new Echo("same"), new Echo("same")], logger: silentLogger }), "DUPLICATE_NAME");
    expect(twice).toBeInstanceOf(DuplicateNameError);
    expect((twice as DuplicateNameError).agent).toBe("same");
    throwsWithCode(
      () => new Runtime({ root: new Supervisor("x", { children: [new Supervisor("y", { children: [new Echo("x")] })] }), logger: silentLogger }),
      "DUPLICATE_NAME",
    );
    // the implicit root supervisor's name is taken too
    throwsWithCode(() => new Runtime({ root: [new Echo("root")], logger: silentLogger }), "DUPLICATE_NAME");
  });

  it("refuses an agent instance that already belongs to a runtime", () => {
    const agent = new Echo("echo");
    runtime(agent);
    throwsWithCode(() => new Runtime({ root: new Supervisor("other", { children: [agent] }), logger: silentLogger }), "INVALID_ARGUMENT");
  });

  it.each([
    ["an empty name", () => new AgentProcess("")],
    ["a name with a space", () => new AgentProcess("a b")],
    ["a glob name", () => new AgentProcess("a*")],
    ["an empty supervisor name", () => new Supervisor("", { children: [] })],
    ["a negative mailboxSize", () => new AgentProcess("a", { mailboxSize: -1 })],
    ["a zero mailboxSize", () => new AgentProcess("a", { mailboxSize: 0 })],
    ["a fractional mailboxSize", () => new AgentProcess("a", { mailboxSize: 1.5 })],
    ["a negative maxRetries", () => new AgentProcess("a", { maxRetries: -1 })],
    ["a negative shutdownTimeoutMs", () => new AgentProcess("a", { shutdownTimeoutMs: -5 })],
  ])("refuses %s with INVALID_ARGUMENT", (_what, make) => {
    throwsWithCode(make, "INVALID_ARGUMENT");
  });
});

describe("Runtime lifecycle", () => {
  it("start is idempotent: a second call returns the same promise and starts nothing twice", async () => {
    const agent = new Lifecycle("agent");
    const rt = runtime(agent);
    const first = rt.start();
    const second = rt.start();
    expect(second).toBe(first);
    await first;
    expect(agent.startCount).toBe(1);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    expect(rt.start()).toBe(first);
  });

  it("stop is idempotent: a second call returns the same promise and stops once", async () => {
    const agent = new Lifecycle("agent");
    const rt = await whenStarted(runtime(agent));
    const first = rt.stop();
    expect(rt.stop()).toBe(first);
    await first;
    expect(rt.stop()).toBe(first);
    expect(agent.stopCount).toBe(1);
    expect(agent.status).toBe(ProcessStatus.STOPPED);
  });

  it("refuses start after stop with RUNTIME_STOPPED (by rejecting, not throwing)", async () => {
    const agent = new Lifecycle("agent");
    const rt = await whenStarted(runtime(agent));
    await rt.stop();
    let promise: Promise<void> | undefined;
    expect(() => (promise = rt.start())).not.toThrow();
    const error = await rejectsWithCode(promise as Promise<void>, "RUNTIME_STOPPED");
    expect(error).toBeInstanceOf(RuntimeStateError);
    expect(agent.startCount).toBe(1);
  });

  it("can be stopped without ever being started, and then refuses to start", async () => {
    const agent = new Lifecycle("agent");
    const rt = runtime(agent);
    await rt.stop();
    expect(agent.startCount).toBe(0);
    await rejectsWithCode(rt.start(), "RUNTIME_STOPPED");
  });

  it("stops children in reverse start order", async () => {
    const order: string[] = [];
    class Ordered extends AgentProcess {
      override async onStart(): Promise<void> {
        order.push(`start ${this.name}`);
      }
      override async onStop(): Promise<void> {
        order.push(`stop ${this.name}`);
      }
    }
    const rt = await whenStarted(runtime([new Ordered("a"), new Ordered("b"), new Ordered("c")]));
    await rt.stop();
    expect(order).toEqual(["start a", "start b", "start c", "stop c", "stop b", "stop a"]);
  });
});

describe("Runtime send and ask from outside", () => {
  it("send delivers the payload and type to the agent, from _runtime", async () => {
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime(silent));
    await rt.send("silent", { n: 1 }, { type: "greet" });
    await eventually(() => silent.handled.length === 1, "the message to be handled");
    const [message] = silent.handled;
    expect(message?.payload).toEqual({ n: 1 });
    expect(message?.type).toBe("greet");
    expect(message?.sender).toBe("_runtime");
    expect(message?.recipient).toBe("silent");
    expect(message?.correlationId).toBeUndefined();
  });

  it("delivers a valid payload nested deeper than the quick JSON check looks (100 levels), from outside and from an agent", async () => {
    let deep: JsonObject = { leaf: true };
    for (let i = 0; i < 100; i++) deep = { next: deep };
    class Forwarder extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        await this.send("silent", message.payload);
      }
    }
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime([silent, new Forwarder("forwarder"), new Echo("echo")]));
    await rt.send("forwarder", deep);
    await eventually(() => silent.handled.length === 1, "the forwarded message to be handled");
    expect(silent.handled[0]?.payload).toBe(deep);
    expect(silent.handled[0]?.sender).toBe("forwarder");
    const reply = await rt.ask("echo", deep);
    expect(reply.payload.next).toBe(deep.next);
  });

  it("send defaults the type to 'message'", async () => {
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime(silent));
    await rt.send("silent", {});
    await eventually(() => silent.handled.length === 1, "the message to be handled");
    expect(silent.handled[0]?.type).toBe("message");
  });

  it("ask resolves with the reply message", async () => {
    const echo = new Echo("echo");
    const rt = await whenStarted(runtime(echo));
    const reply = await rt.ask("echo", { q: 1 }, { type: "question" });
    expect(reply.payload).toEqual({ q: 1, from: "echo" });
    expect(reply.sender).toBe("echo");
    expect(reply.recipient).toBe("_runtime");
    expect(reply.correlationId).toBe(echo.handled[0]?.correlationId);
    expect(echo.handled[0]?.type).toBe("question");
    expect(echo.handled[0]?.replyTo).toBe("_runtime");
  });

  it("refuses a negative or non-finite timeoutMs with INVALID_ARGUMENT, by rejecting", async () => {
    const rt = await whenStarted(runtime(new Echo("echo")));
    for (const timeoutMs of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      let promise: Promise<Message> | undefined;
      expect(() => (promise = rt.ask("echo", {}, { timeoutMs }))).not.toThrow();
      await rejectsWithCode(promise as Promise<Message>, "INVALID_ARGUMENT");
    }
  });

  it("refuses a negative ttlMs with INVALID_ARGUMENT", async () => {
    const silent = new Silent("silent");
    const rt = runtime(silent);
    await rejectsWithCode(rt.send("silent", {}, { ttlMs: -1 }), "INVALID_ARGUMENT");
    expect(silent.mailbox.size).toBe(0);
  });
});

describe("reserved message types", () => {
  it.each(RESERVED)("runtime.send and runtime.ask refuse %s with RESERVED_MESSAGE_TYPE", async (type) => {
    const silent = new Silent("silent");
    const rt = runtime(silent);
    const sent = await rejectsWithCode(rt.send("silent", {}, { type }), "RESERVED_MESSAGE_TYPE");
    expect(sent).toBeInstanceOf(ReservedMessageTypeError);
    expect((sent as ReservedMessageTypeError).type).toBe(type);
    await rejectsWithCode(rt.ask("silent", {}, { type, timeoutMs: 1_000 }), "RESERVED_MESSAGE_TYPE");
    expect(silent.mailbox.size).toBe(0);
    expect(silent.mailbox.prioritySize).toBe(0);
  });

  it("an agent's send, ask, broadcast and sendCapable refuse reserved types, and the target never sees them", async () => {
    const results: Record<string, unknown> = {};
    class Forger extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        const type = String(message.payload.type);
        const code = (e: { code?: string }): string | undefined => e.code;
        results[`send ${type}`] = await this.send("target", {}, { type }).then(() => "sent", code);
        results[`ask ${type}`] = await this.ask("target", {}, { type, timeoutMs: 1_000 }).then(() => "answered", code);
        results[`broadcast ${type}`] = await this.broadcast("targ*", {}, { type }).then((n) => `sent to ${n}`, code);
        results[`sendCapable ${type}`] = await this.sendCapable("approve", {}, { type }).then(() => "sent", code);
      }
    }
    const target = new Echo("target", { capabilities: ["approve"] });
    const forger = new Forger("forger");
    const rt = await whenStarted(runtime([target, forger]));
    for (const type of RESERVED) await rt.send("forger", { type });
    await eventually(() => Object.keys(results).length === RESERVED.length * 4, "the forger to try every type");
    for (const [attempt, outcome] of Object.entries(results)) {
      expect(outcome, attempt).toBe("RESERVED_MESSAGE_TYPE");
    }
    // control still works for the runtime, and nothing reached the target
    expect((await rt.ask("target", { ok: true })).payload).toEqual({ ok: true, from: "target" });
    expect(target.handled.map((m) => m.type)).toEqual(["message"]);
    expect(target.status).toBe(ProcessStatus.RUNNING);
  });

  it("leaves civitas.eval.* types and ordinary dotted types sendable", async () => {
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime(silent));
    await rt.send("silent", {}, { type: "civitas.eval.correction" });
    await rt.send("silent", {}, { type: "agency.resume" });
    await eventually(() => silent.handled.length === 1, "the ordinary message");
    expect(silent.handled.map((m) => m.type)).toEqual(["agency.resume"]);
  });
});

describe("payload validation", () => {
  it.each(BAD_PAYLOADS)("runtime.send and runtime.ask refuse %s before anything is enqueued", async (_what, payload) => {
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime(silent));
    const error = await rejectsWithCode(rt.send("silent", payload as JsonObject), "PAYLOAD_NOT_SERIALIZABLE");
    expect(error).toBeInstanceOf(PayloadNotSerializableError);
    await rejectsWithCode(rt.ask("silent", payload as JsonObject, { timeoutMs: 1_000 }), "PAYLOAD_NOT_SERIALIZABLE");
    // A good payload is handled, and first: a refused one enqueued before it would have been handled before it.
    await rt.send("silent", { fine: [1, "two", null, { three: true }] });
    await eventually(() => silent.handled.length > 0, "the good message to be handled");
    expect(silent.handled.map((m) => m.payload)).toEqual([{ fine: [1, "two", null, { three: true }] }]);
  });

  it("names the offending path", async () => {
    const rt = runtime(new Silent("silent"));
    const error = await rejectsWithCode(rt.send("silent", { items: [1, { at: new Date(0) }] } as unknown as JsonObject), "PAYLOAD_NOT_SERIALIZABLE");
    expect((error as PayloadNotSerializableError).path).toBe("$.items[1].at");
  });

  it("an agent's send and ask refuse a bad payload and the recipient receives nothing", async () => {
    const codes: unknown[] = [];
    class Sender extends AgentProcess {
      override async handle(): Promise<void> {
        const bad = { at: new Date(0) } as unknown as JsonObject;
        codes.push(await this.send("silent", bad).catch((e: { code?: string }) => e.code));
        codes.push(await this.ask("silent", bad, { timeoutMs: 1_000 }).catch((e: { code?: string }) => e.code));
        codes.push(await this.broadcast("sil*", bad).catch((e: { code?: string }) => e.code));
      }
    }
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime([new Sender("sender"), silent]));
    await rt.send("sender", {});
    await eventually(() => codes.length === 3, "the sender to try");
    expect(codes).toEqual(["PAYLOAD_NOT_SERIALIZABLE", "PAYLOAD_NOT_SERIALIZABLE", "PAYLOAD_NOT_SERIALIZABLE"]);
    expect(silent.handled).toHaveLength(0);
    expect(silent.mailbox.size).toBe(0);
  });

  it("an agent's ask refuses a negative timeoutMs with INVALID_ARGUMENT", async () => {
    const codes: unknown[] = [];
    class Asker extends AgentProcess {
      override async handle(): Promise<void> {
        codes.push(await this.ask("silent", {}, { timeoutMs: -10 }).catch((e: { code?: string }) => e.code));
      }
    }
    const silent = new Silent("silent");
    const rt = await whenStarted(runtime([new Asker("asker"), silent]));
    await rt.send("asker", {});
    await eventually(() => codes.length === 1, "the ask to be refused");
    expect(codes).toEqual(["INVALID_ARGUMENT"]);
    expect(silent.handled).toHaveLength(0);
  });
});

/** A {@link Silent} whose `onStart` waits for `started` to open. */
class SlowStart extends Silent {
  readonly started: Gate = gate();
  override async onStart(): Promise<void> {
    await this.started.promise;
  }
}

describe("message TTL", () => {
  it("discards, counts and reports a message that outlived its ttlMs while the agent was starting", async () => {
    const clock = new TestClock();
    const silent = new SlowStart("silent");
    const rt = runtime(silent, { clock });
    const expired: Message[] = [];
    rt.on("message.expired", (m) => expired.push(m));

    const starting = rt.start(); // sends made while start() runs wait in the mailbox
    await rt.send("silent", { n: 1 }, { ttlMs: 100 });
    await rt.send("silent", { n: 2 }, { ttlMs: 10_000 });
    await rt.send("silent", { n: 3 });
    await clock.advance(101);
    silent.started.open();
    await starting;
    await eventually(() => silent.handled.length === 2, "the live messages to be handled");

    expect(silent.handled.map((m) => m.payload.n)).toEqual([2, 3]);
    expect(silent.mailbox.expiredCount).toBe(1);
    expect(expired.map((m) => m.payload)).toEqual([{ n: 1 }]);
    expect(expired[0]?.ttlMs).toBe(100);
  });

  it("keeps a message whose age equals its ttlMs", async () => {
    const clock = new TestClock();
    const silent = new SlowStart("silent");
    const rt = runtime(silent, { clock });
    const starting = rt.start();
    await rt.send("silent", { n: 1 }, { ttlMs: 100 });
    await clock.advance(100);
    silent.started.open();
    await starting;
    await eventually(() => silent.handled.length === 1, "the message to be handled");
    expect(silent.mailbox.expiredCount).toBe(0);
  });

  it("discards a message that expires while the agent is busy with an earlier one", async () => {
    const clock = new TestClock();
    const gates: Gate[] = [];
    const handled: unknown[] = [];
    class Busy extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        handled.push(message.payload.n);
        if (message.payload.block === true) {
          const g = gate();
          gates.push(g);
          await g.promise;
        }
      }
    }
    const busy = new Busy("busy");
    const rt = runtime(busy, { clock });
    const expired: Message[] = [];
    rt.on("message.expired", (m) => expired.push(m));
    await rt.start();
    await rt.send("busy", { n: 1, block: true });
    await eventually(() => gates.length === 1, "busy to block");
    await rt.send("busy", { n: 2 }, { ttlMs: 50 });
    await clock.advance(51);
    const after = track(rt.send("busy", { n: 3 }));
    gates[0]?.open();
    await after.promise;
    await eventually(() => handled.length === 2, "the last message to be handled");
    expect(handled).toEqual([1, 3]);
    expect(busy.mailbox.expiredCount).toBe(1);
    expect(expired.map((m) => m.payload.n)).toEqual([2]);
  });
});

describe("fairness under a message storm", () => {
  it("keeps timers and ask timeouts working while two agents ping-pong flat out", async () => {
    let exchanges = 0;
    // A safety valve: if the runtime starved the event loop, the storm ends by
    // itself after 3 s so the assertions below fail instead of hanging the run.
    let stormEndsAt = Number.POSITIVE_INFINITY;
    class Player extends AgentProcess {
      constructor(
        name: string,
        private readonly partner: string,
      ) {
        super(name);
      }
      override async handle(message: Message): Promise<void> {
        exchanges++;
        if (performance.now() > stormEndsAt) return;
        await this.send(this.partner, { n: Number(message.payload.n) + 1 });
      }
    }
    const rt = await whenStarted(runtime([new Player("ping", "pong"), new Player("pong", "ping"), new Silent("silent")]));
    await rt.send("ping", { n: 0 });

    const began = performance.now();
    stormEndsAt = began + 3_000;
    let timerFiredAt: number | undefined;
    let exchangesWhenTimerFired = 0;
    setTimeout(() => {
      timerFiredAt = performance.now() - began;
      exchangesWhenTimerFired = exchanges;
    }, 10);

    const exchangesBefore = exchanges;
    const error = await rejectsWithCode(rt.ask("silent", {}, { timeoutMs: 50 }), "ASK_TIMEOUT");
    const elapsed = performance.now() - began;
    const exchangesAtTimeout = exchanges;

    expect(error.name).toBe("AskTimeoutError");
    expect(elapsed).toBeLessThan(2_000);
    expect(timerFiredAt, "the setTimeout callback must fire during the storm").toBeDefined();
    expect(timerFiredAt as number).toBeLessThan(2_000);
    // the storm made progress, before and after the timer and the timeout
    expect(exchangesWhenTimerFired).toBeGreaterThan(exchangesBefore);
    expect(exchangesAtTimeout).toBeGreaterThan(100);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(exchanges, "the storm continues after the timeout").toBeGreaterThan(exchangesAtTimeout);
  });
});
