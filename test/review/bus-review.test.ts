/**
 * Regression tests from an adversarial review of the message bus,
 * request/reply, TTL and the mailbox: each test pins down a defect.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  CivitasError,
  createMessage,
  DynamicSupervisor,
  ErrorAction,
  Mailbox,
  Runtime,
  silentLogger,
  Supervisor,
  type JsonObject,
  type Message,
  type RuntimeOptions,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import v8 from "node:v8";
import vm from "node:vm";
import { eventually, track, turns } from "../runtime/fixtures.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const runtimes: Runtime[] = [];

function runtime(children: (AgentProcess | DynamicSupervisor)[], options: Partial<RuntimeOptions> = {}): Runtime {
  const rt = new Runtime({
    root: new Supervisor("root", { children, backoffBaseMs: 0 }),
    logger: silentLogger,
    keepAlive: false,
    ...options,
  });
  runtimes.push(rt);
  return rt;
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => Promise.race([rt.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 1500))])));
});

function codeOf(error: unknown): string {
  return error instanceof CivitasError ? error.code : `not a CivitasError: ${String(error)}`;
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return "resolved";
}

class Sink extends AgentProcess {
  readonly seen: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.seen.push(message);
  }
}

/** Blocks every handle() until released. */
class Stuck extends AgentProcess {
  release!: () => void;
  gate = new Promise<void>((r) => (this.release = r));
  override async handle(): Promise<void> {
    await this.gate;
  }
}

/** Runs `fn` inside handle() and replies with what it resolved to, or the error code. */
class Doer extends AgentProcess {
  fn: ((self: Doer) => Promise<unknown>) | undefined;
  override async handle(): Promise<Message | void> {
    try {
      const value = await this.fn?.(this);
      return this.reply({ ok: true, value: value === undefined ? null : (value as JsonObject) });
    } catch (error) {
      return this.reply({ ok: false, code: codeOf(error) });
    }
  }
}

function msg(n: number, extra: Partial<Parameters<typeof createMessage>[0]> = {}): Message {
  return createMessage({ sender: "t", recipient: "box", payload: { n }, ...extra });
}

describe("sendCapable turn", () => {
  it("a sendCapable refused for an empty type does not move the turn", async () => {
    const a = new Sink("a", { capabilities: ["cap"] });
    const b = new Sink("b", { capabilities: ["cap"] });
    const doer = new Doer("doer");
    const rt = runtime([a, b, doer]);
    await rt.start();
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 }, { type: "" });
    expect((await rt.ask("doer", {})).payload.code).toBe("INVALID_ARGUMENT");
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    expect((await rt.ask("doer", {})).payload.ok).toBe(true);
    await eventually(() => a.seen.length + b.seen.length === 1);
    expect(a.seen.map((m) => m.payload.n)).toEqual([2]);
  });

  it("removing the agent whose turn just passed does not make the next one lose its turn", async () => {
    const dyn = new DynamicSupervisor("pool");
    const doer = new Doer("doer");
    const rt = runtime([doer, dyn]);
    await rt.start();
    const w1 = await dyn.spawn(Sink, "w1", { capabilities: ["cap"] });
    const w2 = await dyn.spawn(Sink, "w2", { capabilities: ["cap"] });
    const w3 = await dyn.spawn(Sink, "w3", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 });
    await rt.ask("doer", {}); // w1's turn
    await dyn.despawn("w1");
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    await rt.ask("doer", {}); // w2's turn now (registration order)
    await eventually(() => w2.seen.length + w3.seen.length === 1);
    expect(w1.seen.map((m) => m.payload.n)).toEqual([1]);
    expect(w2.seen.map((m) => m.payload.n)).toEqual([2]);
  });

  it("agents that declare a capability again after all were removed take turns from the first", async () => {
    const dyn = new DynamicSupervisor("pool");
    const doer = new Doer("doer");
    const rt = runtime([doer, dyn]);
    await rt.start();
    await dyn.spawn(Sink, "old", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 });
    await rt.ask("doer", {});
    await dyn.despawn("old");
    const x = await dyn.spawn(Sink, "x", { capabilities: ["cap"] });
    const y = await dyn.spawn(Sink, "y", { capabilities: ["cap"] });
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    await rt.ask("doer", {});
    await eventually(() => x.seen.length + y.seen.length === 1);
    expect(x.seen.map((m) => m.payload.n)).toEqual([2]);
  });
});

describe("bad signal", () => {
  it("runtime.ask with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const rt = runtime([new Sink("s")]);
    await rt.start();
    const error = await errorOf(rt.ask("s", {}, { signal: null as unknown as AbortSignal, timeoutMs: 100 }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("runtime.send waiting on a full mailbox with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const s = new Stuck("s", { mailboxSize: 1 });
    const rt = runtime([s]);
    await rt.start();
    await rt.send("s", {}); // being handled
    await turns();
    await rt.send("s", {}); // fills the lane
    const error = await errorOf(rt.send("s", {}, { signal: {} as AbortSignal }));
    s.release();
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("Mailbox.put on a full lane with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(1));
    const error = await errorOf(box.put(msg(2), { signal: {} as AbortSignal }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("Mailbox.get on an empty mailbox with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const box = new Mailbox({ capacity: 1 });
    const error = await errorOf(box.get({ signal: {} as AbortSignal }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });
});

describe("aborted waits do not pile up", () => {
  /** Runs a full, forced garbage collection (after the current job, so WeakRefs can clear). */
  async function collect(): Promise<void> {
    for (let i = 0; i < 2; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
  }

  it("puts aborted behind a live waiting put are let go, not kept until the lane drains", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(0));
    const live = track(box.put(msg(1))); // waits, never aborted
    const refs: WeakRef<Message>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      const m = msg(100 + i);
      refs.push(new WeakRef(m));
      const p = box.put(m, { signal: controller.signal });
      controller.abort(new Error("gave up"));
      expect(codeOf(await p.catch((e: unknown) => e))).toBe("not a CivitasError: Error: gave up");
    }
    await collect();
    // every aborted put has been refused: the mailbox must not hold on to any of them
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThan(10);
    expect(live.state).toBe("pending");
  });

  it("gets aborted behind a live waiting get are let go, not kept until a message arrives", async () => {
    const box = new Mailbox({ capacity: 1 });
    const live = track(box.get());
    const refs: WeakRef<AbortSignal>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      refs.push(new WeakRef(controller.signal));
      const p = box.get({ signal: controller.signal });
      controller.abort(new Error("gave up"));
      await p.catch(() => undefined);
    }
    await collect();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThan(10);
    expect(live.state).toBe("pending");
  });

  it("runtime.send calls aborted while another send waits on a full mailbox do not keep their messages", async () => {
    const s = new Stuck("s", { mailboxSize: 1 });
    const rt = runtime([s]);
    await rt.start();
    await rt.send("s", { n: 0 }); // being handled
    await turns();
    await rt.send("s", { n: 1 }); // fills the lane
    const live = track(rt.send("s", { n: 2 })); // waits for room, no signal
    const refs: WeakRef<JsonObject>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      const payload = { n: 100 + i };
      refs.push(new WeakRef(payload));
      const p = rt.send("s", payload, { signal: controller.signal });
      controller.abort(new Error("gave up"));
      await p.catch(() => undefined);
    }
    await collect();
    const kept = refs.filter((r) => r.deref() !== undefined).length;
    s.release();
    await eventually(() => live.state === "resolved");
    expect(kept).toBeLessThan(10);
  });
});

describe("send to itself with an aborted signal", () => {
  it("a send to itself from handle() with an already aborted signal rejects and enqueues nothing", async () => {
    const doer = new Doer("doer");
    const rt = runtime([doer]);
    await rt.start();
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

describe("request/reply, reply() and returned messages", () => {
  it("broadcast with an empty type is refused even when nobody matches", async () => {
    const doer = new Doer("doer");
    const rt = runtime([doer]);
    await rt.start();
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
    const rt = runtime([agent]);
    await rt.start();
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
    const rt = runtime([new Maker("maker", clock), b], { clock });
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
    const rt = runtime([new Maker("maker", clock), b], { clock });
    await rt.start();
    await rt.send("maker", { n: 2, field: "correlationId" });
    await turns(10);
    expect(rt.lateReplies).toBe(0);
    expect(b.seen.map((m) => m.payload.n)).toEqual([2]);
  });
});

describe("backpressure next to a retried message", () => {
  it("a send waiting for room stays waiting while the lane is full with a retried message", async () => {
    let releaseFirst!: () => void;
    const first = new Promise<void>((r) => (releaseFirst = r));
    let releaseSecond!: () => void;
    const second = new Promise<void>((r) => (releaseSecond = r));
    let failed = false;
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        if (message.payload.n === 1 && !failed) {
          await first;
          failed = true;
          throw new Error("try again");
        }
        if (message.payload.n === 2) await second;
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const agent = new Flaky("flaky", { mailboxSize: 1 });
    const rt = runtime([agent]);
    await rt.start();
    await rt.send("flaky", { n: 1 }); // being handled
    await turns();
    await rt.send("flaky", { n: 2 }); // fills the lane
    const third = track(rt.send("flaky", { n: 3 })); // waits for room
    releaseFirst(); // n=1 fails and is retried: the retry is queued past the capacity, behind n=2
    await eventually(() => failed);
    await turns(10); // the loop takes n=2 (blocked on `second`): the lane still holds the retry, so it is full
    const size = agent.mailbox.size;
    const state = third.state;
    releaseSecond();
    await eventually(() => third.state === "resolved");
    expect(size).toBe(1);
    expect(state).toBe("pending");
  });
});

describe("Mailbox options", () => {
  it("an onExpired that is not a function is refused when the mailbox is made, not by a TypeError at dequeue", async () => {
    let code = "no throw";
    try {
      new Mailbox({ onExpired: 5 as unknown as () => void });
    } catch (e) {
      code = codeOf(e);
    }
    expect(code).toBe("INVALID_ARGUMENT");
  });
});
