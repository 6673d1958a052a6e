import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  ErrorAction,
  InMemoryStateStore,
  isLegalTransition,
  MemoryAuditSink,
  ProcessStatus,
  Supervisor,
  type AgentProcessOptions,
  type Message,
  type RuntimeOptions,
  type Runtime,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { waitForStatus } from "../../src/testing/wait-for-status.js";
import { gate } from "../support/agents.js";
import { FailsToStart } from "../support/probe-agents.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const built = runtimes({ stop: "full" });

/** A runtime for `children` under `new Supervisor("root", { children, backoffBaseMs: 0 })`, stopped after the test. */
function runtime(children: AgentProcess[], options: Partial<RuntimeOptions> = {}): Runtime {
  return built(new Supervisor("root", { children, backoffBaseMs: 0 }), options);
}

/** Records every status change of every agent, to check each against the transition table. */
function recordTransitions(rt: Runtime): Array<[string, ProcessStatus, ProcessStatus]> {
  const seen: Array<[string, ProcessStatus, ProcessStatus]> = [];
  rt.on("agent.status", (agent, from, to) => seen.push([agent, from, to]));
  return seen;
}

class Recorder extends AgentProcess<{ handled: string[] }> {
  override state = { handled: [] as string[] };
  readonly log: string[] = [];
  override async onStart(): Promise<void> {
    this.log.push("start");
  }
  override async handle(message: Message): Promise<Message | void> {
    this.state.handled.push(String(message.payload.id));
    this.log.push(`handle:${String(message.payload.id)}`);
    return this.reply({ ok: true });
  }
  override async onStop(): Promise<void> {
    this.log.push("stop");
  }
}

class Failing extends AgentProcess {
  readonly attempts: number[] = [];
  stopped = 0;
  constructor(
    name: string,
    private readonly action: ErrorAction | (() => never),
    options?: AgentProcessOptions,
  ) {
    super(name, options);
  }
  override async handle(message: Message): Promise<void> {
    this.attempts.push(message.attempt);
    if (message.payload.fail === true) throw new Error(`fail ${message.attempt}`);
  }
  override async onError(): Promise<ErrorAction> {
    const action = this.action;
    if (typeof action === "function") action();
    return action as ErrorAction;
  }
  override async onStop(): Promise<void> {
    this.stopped++;
  }
}

async function until(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 1));
  }
}

describe("AgentProcess id", () => {
  it("is a UUIDv7, the same at every read (before and after the start), and differs between instances", async () => {
    const a = new Recorder("a");
    const b = new Recorder("b");
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.id).toBe(a.id);
    expect(b.id).not.toBe(a.id);
    const first = b.id;
    const rt = runtime([a, b]);
    await rt.start();
    expect(b.id).toBe(first);
    expect(a.id).not.toBe(b.id);
  });
});

describe("AgentProcess lifecycle", () => {
  it("INITIALIZING → RUNNING on start, RUNNING → STOPPING → STOPPED on stop, running onStart/onStop", async () => {
    const agent = new Recorder("rec");
    const rt = runtime([agent]);
    const seen = recordTransitions(rt);
    expect(agent.status).toBe(ProcessStatus.INITIALIZING);
    await rt.start();
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    await rt.stop();
    expect(agent.status).toBe(ProcessStatus.STOPPED);
    expect(seen).toEqual([
      ["rec", "INITIALIZING", "RUNNING"],
      ["rec", "RUNNING", "STOPPING"],
      ["rec", "STOPPING", "STOPPED"],
    ]);
    expect(agent.log).toEqual(["start", "stop"]);
  });

  it("RUNNING → CRASHED on an escalated error, runs onStop, and CRASHED → INITIALIZING → RUNNING on restart", async () => {
    const agent = new Failing("f", ErrorAction.ESCALATE);
    const rt = runtime([agent]);
    const seen = recordTransitions(rt);
    await rt.start();
    await rt.send("f", { fail: true });
    await until(() => agent.incarnation === 2 && agent.status === ProcessStatus.RUNNING);
    expect(seen.map(([, from, to]) => `${from}->${to}`)).toEqual([
      "INITIALIZING->RUNNING",
      "RUNNING->CRASHED",
      "CRASHED->INITIALIZING",
      "INITIALIZING->RUNNING",
    ]);
    expect(agent.stopped).toBe(1);
  });

  it("INITIALIZING → CRASHED when onStart throws; start rejects with START_FAILED and onStop still runs", async () => {
    const agent = new FailsToStart("bad");
    const rt = runtime([agent]);
    await expect(rt.start()).rejects.toMatchObject({ name: "StartFailedError", code: "START_FAILED", agent: "bad" });
    expect(agent.status).toBe(ProcessStatus.CRASHED);
    expect(agent.stopCount).toBe(1);
  });

  it("STOPPED → INITIALIZING when a ONE_FOR_ALL sibling crash restarts a stopped agent", async () => {
    const a = new Recorder("a");
    const b = new Failing("b", ErrorAction.ESCALATE);
    const rt = built(new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [a, b] }));
    const seen = recordTransitions(rt);
    await rt.start();
    await rt.send("b", { fail: true });
    await until(() => a.incarnation === 2 && b.incarnation === 2 && b.status === ProcessStatus.RUNNING);
    const ofA = seen.filter(([n]) => n === "a").map(([, from, to]) => `${from}->${to}`);
    expect(ofA).toEqual(["INITIALIZING->RUNNING", "RUNNING->STOPPING", "STOPPING->STOPPED", "STOPPED->INITIALIZING", "INITIALIZING->RUNNING"]);
    for (const [, from, to] of seen) expect(isLegalTransition(from, to)).toBe(true);
  });

  it("finishes the message in flight before stopping, and leaves the rest queued", async () => {
    const first = gate();
    const handled: number[] = [];
    class Slow extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        if (message.payload.n === 0) await first.promise;
        handled.push(message.payload.n as number);
      }
    }
    const agent = new Slow("slow");
    const rt = await whenStarted(runtime([agent]));
    for (let n = 0; n < 3; n++) await rt.send("slow", { n });
    await until(() => agent.mailbox.size === 2);
    const stopping = rt.stop();
    await new Promise((r) => setTimeout(r, 5));
    expect(agent.status).toBe(ProcessStatus.STOPPING);
    first.open();
    await stopping;
    expect(handled).toEqual([0]);
    expect(agent.mailbox.size).toBe(2);
    expect(agent.status).toBe(ProcessStatus.STOPPED);
  });

  it("gives up on a handler that hangs past shutdownTimeoutMs, and the abandoned handler can no longer dispatch", async () => {
    const clock = new TestClock();
    const handled: number[] = [];
    const first = gate();
    class Hangs extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        handled.push(message.payload.n as number);
        if (message.payload.n === 0) await first.promise;
      }
    }
    const agent = new Hangs("hangs", { shutdownTimeoutMs: 1000 });
    const rt = await whenStarted(runtime([agent], { clock }));
    await rt.send("hangs", { n: 0 });
    await rt.send("hangs", { n: 1 });
    await until(() => handled.length === 1);
    const stopping = rt.stop();
    await clock.advance(999);
    expect(agent.status).toBe(ProcessStatus.STOPPING);
    await clock.advance(1);
    await stopping;
    expect(agent.status).toBe(ProcessStatus.STOPPED);
    first.open();
    await new Promise((r) => setTimeout(r, 10));
    expect(handled).toEqual([0]);
  });

  it("messages sent while start() runs wait in the mailbox and are handled, in order", async () => {
    const agent = new Recorder("early");
    const rt = runtime([agent]);
    const starting = rt.start();
    for (let id = 0; id < 5; id++) await rt.send("early", { id });
    await starting;
    await until(() => agent.state.handled.length === 5);
    expect(agent.state.handled).toEqual(["0", "1", "2", "3", "4"]);
  });
});

describe("AgentProcess error actions", () => {
  it("RETRY re-enqueues with attempt + 1 and crashes past maxRetries", async () => {
    const agent = new Failing("r", ErrorAction.RETRY, { maxRetries: 2 });
    const audit = new MemoryAuditSink();
    const rt = await whenStarted(runtime([agent], { auditSink: audit }));
    await rt.send("r", { fail: true });
    await until(() => agent.incarnation === 2);
    expect(agent.attempts).toEqual([0, 1, 2]);
    expect(audit.ofType("agent.crash", "r")).toHaveLength(1);
  });

  it("RETRY does not deadlock when the agent's own mailbox is full", async () => {
    const first = gate();
    const seen: string[] = [];
    class Busy extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        seen.push(`${String(message.payload.id)}@${message.attempt}`);
        if (message.payload.id === "x" && message.attempt === 0) {
          await first.promise;
          throw new Error("transient");
        }
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const agent = new Busy("busy", { mailboxSize: 1 });
    const rt = await whenStarted(runtime([agent]));
    await rt.send("busy", { id: "x" });
    await until(() => seen.length === 1);
    await rt.send("busy", { id: "y" }); // fills the one-slot lane
    expect(agent.mailbox.size).toBe(1);
    first.open();
    await until(() => seen.length === 3);
    expect(seen).toEqual(["x@0", "y@0", "x@1"]);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
  });

  it("SKIP drops the message and carries on", async () => {
    const agent = new Failing("s", ErrorAction.SKIP);
    const rt = await whenStarted(runtime([agent]));
    await rt.send("s", { fail: true });
    await rt.send("s", { fail: false });
    await until(() => agent.attempts.length === 2);
    expect(agent.attempts).toEqual([0, 0]);
    expect(agent.status).toBe(ProcessStatus.RUNNING);
    expect(agent.incarnation).toBe(1);
  });

  it("STOP stops the agent cleanly and its supervisor does not restart it", async () => {
    const agent = new Failing("st", ErrorAction.STOP);
    const rt = await whenStarted(runtime([agent]));
    await rt.send("st", { fail: true });
    await waitForStatus(agent, ProcessStatus.STOPPED, { timeoutMs: 2000 });
    await new Promise((r) => setTimeout(r, 20));
    expect(agent.status).toBe(ProcessStatus.STOPPED);
    expect(agent.incarnation).toBe(1);
    expect(agent.stopped).toBe(1);
  });

  it("ESCALATE is the default, and an onError that throws escalates too", async () => {
    class Default extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    const d = new Default("d");
    const t = new Failing("t", () => {
      throw new Error("onError broke");
    });
    const rt = await whenStarted(runtime([d, t]));
    await rt.send("d", {});
    await rt.send("t", { fail: true });
    await until(() => d.incarnation === 2 && t.incarnation === 2);
  });

  it("an onError returning something that is not an ErrorAction escalates", async () => {
    const agent = new Failing("weird", "LATER" as ErrorAction);
    const rt = await whenStarted(runtime([agent]));
    await rt.send("weird", { fail: true });
    await until(() => agent.incarnation === 2);
  });
});

describe("AgentProcess state", () => {
  class Counter extends AgentProcess<{ count: number }> {
    override state = { count: 0 };
    override async handle(message: Message): Promise<Message | void> {
      if (message.payload.crash === true) throw new Error("crash");
      this.state.count++;
      if (message.payload.save === true) await this.checkpoint();
      return this.reply({ count: this.state.count });
    }
  }

  it("restores the last checkpoint on restart, and the initial state when there is none", async () => {
    const store = new InMemoryStateStore();
    const saved = new Counter("saved");
    const unsaved = new Counter("unsaved");
    const rt = await whenStarted(runtime([saved, unsaved], { store }));
    await rt.ask("saved", { save: true });
    await rt.ask("saved", {}); // not checkpointed
    await rt.ask("unsaved", {});
    expect(await store.get("saved")).toEqual({ count: 1 });
    await rt.send("saved", { crash: true });
    await rt.send("unsaved", { crash: true });
    await until(() => saved.incarnation === 2 && unsaved.incarnation === 2 && saved.status === ProcessStatus.RUNNING && unsaved.status === ProcessStatus.RUNNING);
    expect(saved.state).toEqual({ count: 1 });
    expect(unsaved.state).toEqual({ count: 0 });
  });

  it("restores state from the store before onStart on a fresh runtime", async () => {
    const store = new InMemoryStateStore();
    await store.set("c", { count: 41 });
    let seenInOnStart: number | undefined;
    class Peek extends Counter {
      override async onStart(): Promise<void> {
        seenInOnStart = this.state.count;
      }
    }
    const rt = await whenStarted(runtime([new Peek("c")], { store }));
    expect(seenInOnStart).toBe(41);
    expect((await rt.ask("c", {})).payload).toEqual({ count: 42 });
  });

  it("refuses a stored record of an unknown version before the agent runs (STATE_SCHEMA)", async () => {
    let started = false;
    class Broken extends InMemoryStateStore {
      override get(): Promise<undefined> {
        return Promise.reject(Object.assign(new Error("x"), { code: "STATE_SCHEMA" }));
      }
    }
    const broken = new Broken();
    class Never extends AgentProcess {
      override async onStart(): Promise<void> {
        started = true;
      }
    }
    const rt = runtime([new Never("n")], { store: broken });
    await expect(rt.start()).rejects.toMatchObject({ code: "START_FAILED", cause: { code: "STATE_SCHEMA" } });
    expect(started).toBe(false);
  });

  it("a checkpoint of non-JSON state rejects with PAYLOAD_NOT_SERIALIZABLE and keeps the stored state", async () => {
    const store = new InMemoryStateStore();
    class Bad extends AgentProcess<{ n: number }> {
      override state = { n: 1 };
      override async handle(message: Message): Promise<Message | void> {
        if (message.payload.bad === true) (this.state as Record<string, unknown>).when = new Date(0);
        try {
          await this.checkpoint();
          return this.reply({ ok: true });
        } catch (error) {
          return this.reply({ code: (error as { code: string }).code });
        }
      }
    }
    const rt = await whenStarted(runtime([new Bad("b")] as AgentProcess[], { store }));
    expect((await rt.ask("b", {})).payload).toEqual({ ok: true });
    expect((await rt.ask("b", { bad: true })).payload).toEqual({ code: "PAYLOAD_NOT_SERIALIZABLE" });
    expect(await store.get("b")).toEqual({ n: 1 });
  });

  it("rejects non-JSON initial state at start", async () => {
    class Bad extends AgentProcess {
      constructor(name: string) {
        super(name);
        (this.state as Record<string, unknown>).fn = () => 1;
      }
    }
    const rt = runtime([new Bad("bad-initial")]);
    await expect(rt.start()).rejects.toMatchObject({ code: "START_FAILED", cause: { code: "PAYLOAD_NOT_SERIALIZABLE" } });
  });
});

describe("AgentProcess messaging from inside handle", () => {
  it("reply() outside handle throws INVALID_ARGUMENT; returned non-messages are ignored", async () => {
    const agent = new Recorder("r1");
    runtime([agent]);
    expect(() => agent.reply({})).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }) as Error);
  });

  it("sendCapable picks agents round-robin by capability, broadcast reaches every other match", async () => {
    const got: string[] = [];
    class Sink extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        got.push(`${this.name}:${String(message.payload.k)}`);
      }
    }
    class Driver extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        if (message.payload.op === "capable") {
          for (let k = 0; k < 4; k++) await this.sendCapable("store", { k });
          return this.reply({});
        }
        const n = await this.broadcast("sink-*", { k: "b" });
        return this.reply({ n });
      }
    }
    const rt = runtime([
      new Driver("sink-driver"),
      new Sink("sink-1", { capabilities: ["store"] }),
      new Sink("sink-2", { capabilities: ["store", "store"] }),
      new Sink("other"),
    ]);
    await rt.start();
    await rt.ask("sink-driver", { op: "capable" });
    await until(() => got.length === 4);
    expect(got.sort()).toEqual(["sink-1:0", "sink-1:2", "sink-2:1", "sink-2:3"]);
    got.length = 0;
    expect((await rt.ask("sink-driver", { op: "broadcast" })).payload).toEqual({ n: 2 });
    await until(() => got.length === 2);
    expect(got.sort()).toEqual(["sink-1:b", "sink-2:b"]);
  });

  it("sendCapable with no capable agent rejects with AGENT_NOT_FOUND", async () => {
    class Driver extends AgentProcess {
      override async handle(): Promise<Message> {
        try {
          await this.sendCapable("nobody-has-this", {});
          return this.reply({ ok: true });
        } catch (error) {
          return this.reply({ code: (error as { code: string }).code });
        }
      }
    }
    const rt = await whenStarted(runtime([new Driver("drv")]));
    expect((await rt.ask("drv", {})).payload).toEqual({ code: "AGENT_NOT_FOUND" });
  });

  it("agents ask each other and get replies paired by correlation id", async () => {
    class Doubler extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        return this.reply({ v: (message.payload.v as number) * 2 });
      }
    }
    class Front extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        const replies = await Promise.all([1, 2, 3].map((v) => this.ask("doubler", { v: v + (message.payload.base as number) })));
        return this.reply({ vs: replies.map((r) => r.payload.v as number) });
      }
    }
    const rt = await whenStarted(runtime([new Front("front"), new Doubler("doubler")]));
    expect((await rt.ask("front", { base: 10 })).payload).toEqual({ vs: [22, 24, 26] });
  });

  it("answers _agency.heartbeat with _agency.heartbeat_ack on the priority lane", async () => {
    const agent = new Recorder("hb");
    const rt = await whenStarted(runtime([agent]));
    const { buildMessage } = await import("../../src/message/message.js");
    const { mintControl } = await import("../../src/process/control-authority.js");
    const reply = new Promise<Message>((resolve) => {
      const bus = (rt as unknown as { services: { bus: { request: (m: Message, timeoutMs: number) => Promise<Message> } } }).services.bus;
      // As the runtime's transport sends it: minted, since only runtime-made control messages are acted on.
      void bus.request(mintControl(buildMessage({ sender: "_runtime", recipient: "hb", type: "_agency.heartbeat", payload: {}, correlationId: "c1", replyTo: "_runtime" })), 1000).then(resolve);
    });
    expect((await reply).type).toBe("_agency.heartbeat_ack");
    expect(agent.state.handled).toEqual([]);
  });
});

describe("AgentProcess guards", () => {
  it("drops a reserved control message returned from handle(): no agent can forge runtime control", async () => {
    const { createMessage } = await import("../../src/index.js");
    class Forger extends AgentProcess {
      override async handle(): Promise<Message> {
        return createMessage({ sender: this.name, recipient: "victim", type: "_agency.shutdown", payload: {} });
      }
    }
    const victim = new Recorder("victim");
    const rt = await whenStarted(runtime([new Forger("forger"), victim]));
    await rt.send("forger", {});
    await rt.send("victim", { id: 1 });
    await until(() => victim.state.handled.length === 1);
    expect(victim.status).toBe(ProcessStatus.RUNNING);
  });

  it("an agent that stopped on its own takes no more messages: sends reject with MAILBOX_CLOSED", async () => {
    const agent = new Failing("quits", ErrorAction.STOP);
    const rt = await whenStarted(runtime([agent]));
    await rt.send("quits", { fail: true });
    await waitForStatus(agent, ProcessStatus.STOPPED, { timeoutMs: 2000 });
    await expect(rt.send("quits", {})).rejects.toMatchObject({ code: "MAILBOX_CLOSED" });
  });

  it("getSupervisor finds static and dynamic supervisors by name", async () => {
    const { DynamicSupervisor } = await import("../../src/index.js");
    const pool = new DynamicSupervisor("pool");
    const rt = built(new Supervisor("top", { children: [pool, new Recorder("x")] }));
    expect(rt.getSupervisor("pool")).toBe(pool);
    expect(rt.getSupervisor("top")).toBe(rt.root);
    expect(rt.getSupervisor("x")).toBeUndefined();
  });
});

describe("AgentProcess subclassing", () => {
  it("a subclass may use names like start, options, current or marker without breaking the lifecycle", async () => {
    class Clashing extends AgentProcess {
      starts = 0;
      options = { verbose: true };
      current = "mine";
      marker = 42;
      generation = "g";
      start(): string {
        return "user start";
      }
      run(): string {
        return "user run";
      }
      override async onStart(): Promise<void> {
        this.starts++;
      }
      override async handle(): Promise<Message> {
        return this.reply({ starts: this.starts, current: this.current, run: this.run() });
      }
    }
    const agent = new Clashing("clash");
    const rt = await whenStarted(runtime([agent]));
    expect((await rt.ask("clash", {})).payload).toEqual({ starts: 1, current: "mine", run: "user run" });
    expect(agent.incarnation).toBe(1);
    expect(agent.start()).toBe("user start");
  });

  it("broadcast and sendCapable refuse a reserved type or a bad payload even when nothing matches", async () => {
    class Probe extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        const attempt = message.payload.op === "broadcast"
          ? this.broadcast("nobody-*", message.payload.bad === true ? { d: new Date(0) as unknown as string } : {}, { type: message.payload.type as string })
          : this.sendCapable("no-such-capability", {}, { type: message.payload.type as string });
        const code = await attempt.then(() => "ok", (e: { code: string }) => e.code);
        return this.reply({ code });
      }
    }
    const rt = await whenStarted(runtime([new Probe("probe")]));
    expect((await rt.ask("probe", { op: "broadcast", type: "_agency.resume" })).payload).toEqual({ code: "RESERVED_MESSAGE_TYPE" });
    expect((await rt.ask("probe", { op: "broadcast", type: "message", bad: true })).payload).toEqual({ code: "PAYLOAD_NOT_SERIALIZABLE" });
    expect((await rt.ask("probe", { op: "capable", type: "_agency.suspend" })).payload).toEqual({ code: "RESERVED_MESSAGE_TYPE" });
  });
});
