// An ask whose handler failed for good rejects at once with HANDLER_FAILED, the
// handler's error as cause, instead of ASK_TIMEOUT at its deadline (issue 11, section 3).
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  CivitasError,
  DynamicSupervisor,
  ErrorAction,
  HandlerFailedError,
  MemoryAuditSink,
  Supervisor,
  type AgentProcessOptions,
  type Message,
  type RuntimeOptions,
  type Runtime,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually } from "./fixtures.js";
import { gate } from "../support/agents.js";
import { track } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const built = runtimes({ stop: "full" });

function runtime(root: RuntimeOptions["root"], options: Partial<RuntimeOptions> = {}): Runtime {
  // A test clock nobody advances: an ask that settles did not settle by its timeout.
  return built(root, { clock: new TestClock(), ...options });
}

class Boom extends Error {
  override name = "Boom";
}

/** Throws a `Boom` for a payload with `fail: true` (on every attempt below `failUntil`), replies otherwise; answers `action` in onError. */
class Failing extends AgentProcess {
  readonly attempts: number[] = [];
  constructor(
    name: string,
    private readonly action: unknown,
    options?: AgentProcessOptions,
    private readonly failUntil = Number.POSITIVE_INFINITY,
  ) {
    super(name, options);
  }
  override async handle(message: Message): Promise<Message> {
    this.attempts.push(message.attempt);
    if (message.payload.fail === true && message.attempt < this.failUntil) throw new Boom(`payment ${String(message.payload.id)} failed`);
    return this.reply({ ok: message.payload.id ?? null, attempt: message.attempt });
  }
  override async onError(): Promise<ErrorAction> {
    return this.action as ErrorAction;
  }
}

/** Awaits `promise`'s rejection on real time (at most 5 s): the test clock never advances, so no timeout can be what settles it. */
async function failure(promise: Promise<unknown>): Promise<HandlerFailedError> {
  const tracked = track(promise);
  await eventually(() => tracked.state !== "pending", "the ask to settle", 5_000);
  expect(tracked.state).toBe("rejected");
  const error = tracked.reason as HandlerFailedError;
  expect(error).toBeInstanceOf(HandlerFailedError);
  expect(error).toBeInstanceOf(CivitasError);
  expect(error.name).toBe("HandlerFailedError");
  expect(error.code).toBe("HANDLER_FAILED");
  return error;
}

describe("an ask whose handler fails for good rejects at once with HANDLER_FAILED", () => {
  it.each([ErrorAction.SKIP, ErrorAction.STOP, ErrorAction.ESCALATE])("when onError answers %s", async (action) => {
    const agent = new Failing("payer", action);
    const rt = await whenStarted(runtime([agent]));
    const error = await failure(rt.ask("payer", { id: 7, fail: true }));
    expect(error.cause).toBeInstanceOf(Boom);
    expect((error.cause as Error).message).toBe("payment 7 failed");
    expect((error.cause as Error).stack).toContain("Failing.handle");
    expect(error.agent).toBe("payer");
    expect(error.action).toBe(action);
    expect(error.attempt).toBe(0);
    expect(error.message).toContain("'payer'");
    expect(error.message).toContain(action);
    expect(error.message).toContain("Boom: payment 7 failed");
  });

  it("when RETRY runs out of retries: after the last attempt, not before", async () => {
    const agent = new Failing("payer", ErrorAction.RETRY, { maxRetries: 2 });
    const rt = await whenStarted(runtime([agent]));
    const error = await failure(rt.ask("payer", { id: 1, fail: true }));
    expect(agent.attempts).toEqual([0, 1, 2]);
    expect(error.action).toBe("RETRY");
    expect(error.attempt).toBe(2);
    expect(error.message).toContain("after 2 retries");
  });

  it("a RETRY that succeeds answers the ask with the reply", async () => {
    const agent = new Failing("payer", ErrorAction.RETRY, { maxRetries: 3 }, 2);
    const rt = await whenStarted(runtime([agent]));
    const reply = await rt.ask("payer", { id: 3, fail: true });
    expect(reply.payload).toEqual({ ok: 3, attempt: 2 });
  });

  it("after SKIP the agent goes on answering the next ask", async () => {
    const agent = new Failing("payer", ErrorAction.SKIP);
    const rt = await whenStarted(runtime([agent]));
    await failure(rt.ask("payer", { id: 1, fail: true }));
    expect((await rt.ask("payer", { id: 2 })).payload).toEqual({ ok: 2, attempt: 0 });
  });

  it("when onError answers something that is not an ErrorAction (the agent crashes)", async () => {
    const rt = await whenStarted(runtime([new Failing("payer", "NOT_AN_ACTION")]));
    const error = await failure(rt.ask("payer", { id: 1, fail: true }));
    expect(error.action).toBe("NOT_AN_ACTION");
  });

  it("for an ask between agents (this.ask inside a handler)", async () => {
    const seen: unknown[] = [];
    class Caller extends AgentProcess {
      override async handle(): Promise<void> {
        try {
          await this.ask("payer", { id: 9, fail: true });
        } catch (error) {
          seen.push(error);
        }
      }
    }
    const rt = await whenStarted(runtime([new Failing("payer", ErrorAction.SKIP), new Caller("caller")]));
    await rt.send("caller", {});
    await eventually(() => seen.length === 1, "the caller's ask to fail");
    const error = seen[0] as HandlerFailedError;
    expect(error).toBeInstanceOf(HandlerFailedError);
    expect(error.code).toBe("HANDLER_FAILED");
    expect((error.cause as Error).message).toBe("payment 9 failed");
  });

  it("for the ask that crashed the agent; the asks queued behind it are answered after the restart, and the crash is audited", async () => {
    const hold = gate();
    class Crashing extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        if (message.payload.first === true) await hold.promise;
        if (message.payload.fail === true) throw new Boom("crash");
        return this.reply({ incarnation: this.incarnation });
      }
    }
    const audit = new MemoryAuditSink();
    const agent = new Crashing("payer");
    const root = new Supervisor("root", { children: [agent], backoffBaseMs: 0 });
    const rt = await whenStarted(built(root, { auditSink: audit }));
    const first = rt.ask("payer", { first: true, fail: true }, { timeoutMs: 60_000 });
    const queued = rt.ask("payer", { n: 2 }, { timeoutMs: 60_000 });
    hold.open();
    const error = await failure(first);
    expect(error.action).toBe("ESCALATE");
    expect((await queued).payload).toEqual({ incarnation: 2 });
    expect(audit.ofType("agent.crash", "payer")).toHaveLength(1);
  });

  it("when the handler fails while its agent is stopping (a drain-all stop)", async () => {
    const hold = gate();
    class Draining extends Failing {
      override async handle(message: Message): Promise<Message> {
        if (message.payload.first === true) await hold.promise;
        return super.handle(message);
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = await whenStarted(runtime(pool));
    await pool.spawn((name) => new Draining(name, ErrorAction.SKIP), "payer");
    const first = rt.ask("payer", { id: 1, first: true });
    const drained = rt.ask("payer", { id: 2, fail: true });
    await eventually(() => rt.getAgent("payer")?.mailbox.size === 1, "the second ask to be queued");
    const stopping = pool.stop("payer", { drain: "all", timeoutMs: 5_000 });
    hold.open();
    expect((await first).payload).toEqual({ ok: 1, attempt: 0 });
    const error = await failure(drained);
    expect(error.action).toBe("SKIP");
    await stopping;
  });

  it("a failed send (not an ask) answers nobody and changes nothing else", async () => {
    const agent = new Failing("payer", ErrorAction.SKIP);
    const rt = await whenStarted(runtime([agent]));
    await rt.send("payer", { id: 1, fail: true });
    expect((await rt.ask("payer", { id: 2 })).payload).toEqual({ ok: 2, attempt: 0 });
    expect(agent.attempts).toEqual([0, 0]);
    expect(rt.lateReplies).toBe(0);
  });
});
