/**
 * Third adversarial review of the mailbox, the message loop and the
 * scheduler. Each test pins a defect still open on the current code: it
 * asserts what SPEC.md / the TSDoc promise, and fails until it is fixed.
 */
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  CivitasError,
  createMessage,
  DynamicSupervisor,
  isLegalTransition,
  LEGAL_TRANSITIONS,
  ErrorAction,
  Mailbox,
  ProcessStatus,
  Supervisor,
  type Message,
} from "../../src/index.js";
import { codeOf, gate, outcome, runtimes, sleep, until } from "../support/review-kit.js";

const runtime = runtimes();

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
    const rt = runtime(new Supervisor("root", { children: [new Failing("f", { mailboxSize: 1, shutdownTimeoutMs: 100 })] }));
    await rt.start();
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

/** Crashes on every message (a sibling whose crash makes a ONE_FOR_ALL supervisor restart the others). */
class Crasher extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("sibling crash");
  }
}

describe("RETRY racing a restart", () => {
  it("a message onError asks to RETRY while a sibling's crash restarts the agent is handled again, not dropped", async () => {
    const attempts: number[] = [];
    const entered = gate();
    const proceed = gate();
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        attempts.push(message.attempt);
        if (message.attempt === 0) throw new Error("transient");
      }
      override async onError(): Promise<ErrorAction> {
        entered.open();
        await proceed.promise;
        return ErrorAction.RETRY;
      }
    }
    const flaky = new Flaky("flaky", { shutdownTimeoutMs: 2000 });
    const rt = runtime(new Supervisor("root", { children: [flaky, new Crasher("crasher")], strategy: "ONE_FOR_ALL", backoffBaseMs: 0 }));
    await rt.start();
    await rt.send("flaky", { job: 1 });
    await entered.promise;
    await rt.send("crasher", {}); // ONE_FOR_ALL: flaky is stopped (drain "current") and restarted, keeping its mailbox
    await until(() => flaky.status === ProcessStatus.STOPPING, "flaky stopping");
    proceed.open(); // onError answers RETRY: attempts are left, the mailbox stays open for the restart
    await until(() => flaky.incarnation === 2 && flaky.status === ProcessStatus.RUNNING, "flaky restarted");
    await until(() => attempts.length === 2, "the retried message handled", 1000);
    expect(attempts).toEqual([0, 1]);
  });
});

describe("a handler that fails after a restart's stop began", () => {
  it("still goes through onError, and its RETRY survives the restart", async () => {
    const attempts: number[] = [];
    const errors: number[] = [];
    const entered = gate();
    const proceed = gate();
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        attempts.push(message.attempt);
        if (message.attempt === 0) {
          entered.open();
          await proceed.promise;
          throw new Error("transient");
        }
      }
      override async onError(_error: unknown, message: Message): Promise<ErrorAction> {
        errors.push(message.attempt);
        return ErrorAction.RETRY;
      }
    }
    const flaky = new Flaky("flaky", { shutdownTimeoutMs: 2000 });
    const rt = runtime(new Supervisor("root", { children: [flaky, new Crasher("crasher")], strategy: "ONE_FOR_ALL", backoffBaseMs: 0 }));
    await rt.start();
    await rt.send("flaky", { job: 1 });
    await entered.promise;
    await rt.send("crasher", {});
    await until(() => flaky.status === ProcessStatus.STOPPING, "flaky stopping");
    proceed.open(); // the handler throws now, while the stop (drain "current") waits for it
    await until(() => flaky.incarnation === 2 && flaky.status === ProcessStatus.RUNNING, "flaky restarted");
    // "When handle throws (or rejects), the runtime calls onError(error, message) and does what it returns"
    await until(() => errors.length === 1, "onError consulted", 500);
    await until(() => attempts.length === 2, "the retried message handled", 500);
  });
});

describe("an agent that stops itself for good", () => {
  it("an ask already queued when the agent stops itself (ErrorAction.STOP) fails at once, like one still waiting for room", async () => {
    const entered = gate();
    const proceed = gate();
    class Stopper extends AgentProcess {
      override async handle(message: Message): Promise<Message | void> {
        if (message.payload.id === "fatal") {
          entered.open();
          await proceed.promise;
          throw new Error("unrecoverable");
        }
        return this.reply({ ok: true });
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.STOP;
      }
    }
    const rt = runtime(new Supervisor("root", { children: [new Stopper("stopper", { mailboxSize: 1 })] }));
    await rt.start();
    await rt.send("stopper", { id: "fatal" });
    await entered.promise;
    const queued = rt.ask("stopper", { id: "queued" }, { timeoutMs: 5000 }); // takes the one slot
    const waiting = rt.ask("stopper", { id: "waiting" }, { timeoutMs: 5000 }); // waits for room
    proceed.open();
    const waitingOutcome = await outcome(waiting, 1000);
    // The ask that was still waiting for room is told MAILBOX_CLOSED at once ...
    expect(waitingOutcome !== "pending" && !waitingOutcome.ok && codeOf(waitingOutcome.error)).toBe("MAILBOX_CLOSED");
    // ... but the one that got in first is left hanging until its timeout: nobody will ever take it.
    const queuedOutcome = await outcome(queued, 1000);
    expect(queuedOutcome).not.toBe("pending");
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
    const rt = runtime(new Supervisor("root", { children: [agent] }));
    await rt.start();
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

describe("stop(name, { timeoutMs })", () => {
  it("bounds the wait for onStop too, as StopOptions.timeoutMs documents, not only the drain", async () => {
    class HangingStop extends AgentProcess {
      override async onStop(): Promise<void> {
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool);
    await rt.start();
    await pool.spawn(HangingStop, "worker", { shutdownTimeoutMs: 5000 });
    const started = Date.now();
    const stopped = await outcome(pool.stop("worker", { timeoutMs: 100 }), 2000);
    // "How long to wait for the drain (and, separately, for onStop)": 100 ms + 100 ms, not shutdownTimeoutMs (5 s).
    expect(stopped).not.toBe("pending");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("is bounded when the child is still in an onStart that never returns", async () => {
    const entered = gate();
    class HangingStart extends AgentProcess {
      override async onStart(): Promise<void> {
        entered.open();
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool);
    await rt.start();
    void pool.spawn(HangingStart, "worker", { shutdownTimeoutMs: 100 }).catch(() => undefined);
    await entered.promise;
    const stopped = await outcome(pool.stop("worker", { timeoutMs: 100 }), 1500);
    expect(stopped).not.toBe("pending");
  });
});

describe("Mailbox waits with an already aborted signal", () => {
  it("get() with an already aborted signal takes nothing, as put() with one enqueues nothing", async () => {
    const mailbox = new Mailbox({ capacity: 4 });
    const controller = new AbortController();
    controller.abort(new Error("gave up"));
    // put: rejected although there is room, nothing enqueued
    await expect(mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 1 } }), { signal: controller.signal })).rejects.toThrow("gave up");
    expect(mailbox.size).toBe(0);
    await mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 2 } }));
    // get: "Aborting rejects the pending call with signal.reason; nothing is enqueued or taken"
    const got = await outcome(mailbox.get({ signal: controller.signal }), 100);
    expect(got !== "pending" && !got.ok).toBe(true);
    expect(mailbox.size).toBe(1); // the message is still there for a caller that did not give up
  });
});

describe("stop with drain 'all'", () => {
  it("handles what was queued when the stop began, not every message that keeps arriving during the drain", async () => {
    const seen: number[] = [];
    const entered = gate();
    const proceed = gate();
    class Chain extends AgentProcess {
      override async handle(message: Message): Promise<Message | void> {
        const n = message.payload.n as number;
        seen.push(n);
        if (n === 0) {
          entered.open();
          await proceed.promise;
        }
        // a follow-up to itself, as a crawler paging through results would
        return createMessage({ sender: this.name, recipient: this.name, payload: { n: n + 1 } });
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool);
    await rt.start();
    const chain = await pool.spawn(Chain, "chain", { shutdownTimeoutMs: 5000 });
    await rt.send("chain", { n: 0 });
    await entered.promise;
    await rt.send("chain", { n: 100 }); // queued when the stop begins
    const stopping = pool.stop("chain", { drain: "all", timeoutMs: 400 });
    await until(() => chain.status === ProcessStatus.STOPPING, "stopping");
    proceed.open();
    const started = Date.now();
    await stopping;
    // "all" first handles every business message already queued: 0 (in flight) and 100, plus at most
    // the follow-up of the one in flight. It must not keep going until timeoutMs gives up on it.
    expect(seen.length).toBeLessThanOrEqual(4);
    expect(Date.now() - started).toBeLessThan(300);
  });
});

describe("the exported transition table", () => {
  it("cannot be changed at run time: SPEC 4 says any other transition must be impossible", () => {
    const running = LEGAL_TRANSITIONS[ProcessStatus.RUNNING] as ProcessStatus[];
    try {
      running.push(ProcessStatus.INITIALIZING); // a JavaScript caller, or a cast, is enough
    } catch {
      // a frozen table refuses it: what we want
    }
    const allowed = isLegalTransition(ProcessStatus.RUNNING, ProcessStatus.INITIALIZING);
    // undo, so a failure here does not leak into other tests
    const i = running.indexOf(ProcessStatus.INITIALIZING);
    if (i >= 0 && !Object.isFrozen(running)) running.splice(i, 1);
    expect(allowed).toBe(false);
  });

  it("isLegalTransition with a value that is not a ProcessStatus answers false (or throws a CivitasError), not a TypeError", () => {
    let result: unknown;
    try {
      result = isLegalTransition("PAUSED" as ProcessStatus, ProcessStatus.RUNNING);
    } catch (error) {
      result = error instanceof CivitasError ? false : error;
    }
    expect(result).toBe(false);
  });
});
