/**
 * Review of the changes d33f573..HEAD: regressions proven by failing tests.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, createMessage, ErrorAction, ProcessStatus, Runtime, silentLogger, Supervisor, type Message } from "../../src/index.js";
import { testTracing } from "../support/tracing.js";
import { Silent, throwsWithCode } from "../runtime/fixtures.js";
import { Probe } from "../support/agents.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { gate, Pausable, rig, teardown, track, turns, waitUntil } from "../suspension/helpers.js";

afterEach(teardown);

const S = ProcessStatus;

/** Deposits are checkpointed; a debit asks for approval, does half its work in memory, then fails. */
class Ledger extends AgentProcess<{ balance: number }> {
  override state = { balance: 100 };
  override async handle(message: Message): Promise<void> {
    if (message.payload.op === "deposit") {
      this.state.balance += 10;
      await this.checkpoint();
      return;
    }
    if (message.payload.op === "debit") {
      if (message.payload.suspend === true) this.suspend("approve debit");
      this.state.balance -= 50; // half-done, never checkpointed
      throw new Error("payment gateway down");
    }
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
}

describe("finish() persisting a pause asked for (process-runner.ts finish)", () => {
  // Without this.suspend() the same crash restarts on the checkpointed balance (110): only the pause asked for changes it.
  it("a crash after this.suspend() does not write the crashed handler's un-checkpointed state to the store", async () => {
    const agent = new Ledger("ledger");
    const r = rig(new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }));
    await r.runtime.start();
    await r.runtime.send("ledger", { op: "deposit" });
    await r.runtime.send("ledger", { op: "debit", suspend: true });
    await waitUntil(() => agent.incarnation === 2 && agent.status !== S.INITIALIZING, "restarted");
    await turns(10);
    // SPEC 11.4: a restart restores the last checkpoint (balance 110), not what the failed handler left in memory
    expect((await r.store.get("ledger"))?.balance).toBe(110);
    expect(agent.state.balance).toBe(110);
  });
});

/** A TestClock whose reading can be stepped back, like a system clock corrected by NTP. */
class SteppingClock extends TestClock {
  offsetMs = 0;
  override now(): number {
    return super.now() + this.offsetMs;
  }
}

describe("predatesPause: ordering a resume against the pause by UUIDv7 (suspension-control.ts predatesPause)", () => {
  it("a resume sent after the pause began is not dropped because the clock was stepped back", async () => {
    const clock = new SteppingClock();
    const agent = new Pausable("a");
    const r = rig([agent], { clock });
    await r.runtime.start();
    await r.runtime.send("a", { op: "suspend", reason: "approve" });
    await waitUntil(() => agent.status === S.SUSPENDED, "suspended");
    clock.offsetMs = -60_000; // the wall clock is corrected back a minute while the approval is pending
    await r.runtime.resume("a", "alice"); // resolves...
    expect(agent.status).toBe(S.RUNNING); // ...so the agent must be running again
    expect(agent.resumes).toEqual(["alice"]);
  });

  it("a resume sent after the pause began is not dropped when something minted an id on the system clock in between (TestClock runtime)", async () => {
    const agents = Array.from({ length: 24 }, (_, i) => new Pausable(`a${i}`));
    const r = rig(agents); // TestClock: 2023, while Date.now() is today
    await r.runtime.start();
    for (const agent of agents) await r.runtime.send(agent.name, { op: "suspend", reason: "approve" });
    await waitUntil(() => agents.every((a) => a.status === S.SUSPENDED), "all suspended");
    for (const agent of agents) {
      new Pausable(`spare-${agent.name}`); // its constructor mints its id on the system clock (as a spawn would)
      await r.runtime.resume(agent.name, "alice");
    }
    const stillPaused = agents.filter((a) => a.status !== S.RUNNING).map((a) => a.name);
    expect(stillPaused).toEqual([]);
  });
});

/** The documented "store the action, suspend(), checkpoint(), return" handler, whose checkpoint takes a while. */
class SlowCheckpointPayments extends Pausable {
  readonly go = gate();
  readonly paid: string[] = [];
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.entered++;
    this.state.pending = message.payload.invoice ?? null;
    this.suspend(`approve ${String(message.payload.invoice)}`);
    await this.go.promise; // e.g. a checkpoint to a busy store
    await this.checkpoint();
  }
  override async onResume(approver: string): Promise<void> {
    await super.onResume(approver);
    if (typeof this.state.pending !== "string") return;
    this.paid.push(`${this.state.pending} by ${approver}`);
    this.state.pending = null;
  }
}

describe("predatesPause: a resume sent while RUNNING (SPEC 11.9: a no-op)", () => {
  it("does not lift a pause asked for earlier in the running handler, which no caller could see yet", async () => {
    const agent = new SlowCheckpointPayments("pay");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.send("pay", { op: "pay", invoice: "INV-1" });
    await waitUntil(() => agent.entered === 1, "handling");
    // What an approver can see: RUNNING, no pause, nothing listed.
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspension).toBeUndefined();
    expect(r.runtime.listSuspended()).toEqual([]);
    const resuming = track(r.runtime.resume("pay", "bob")); // by contract a no-op on a running agent
    await turns(5);
    agent.go.open();
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    await turns(20);
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
  });
});

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

describe("requestStop clearing `current` when it gives up on a handler (process-runner.ts requestStop)", () => {
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

describe("trace flags: null counts as absent (telemetry.ts startMessageSpan, envelope.ts composeOutgoing)", () => {
  it("a hand-built message with traceFlags: null (accepted by envelopeProblem as absent) still gets a sampled root handle span", async () => {
    const tracing = testTracing(); // ParentBased(AlwaysOn)
    const agent = new Silent("s");
    const runtime = new Runtime({ root: [agent], logger: silentLogger, tracerProvider: tracing.provider });
    try {
      await runtime.start();
      const message = { ...createMessage({ sender: "x", recipient: "s", payload: { n: 1 } }), traceFlags: null } as unknown as Message;
      await agent.mailbox.put(message);
      await waitUntil(() => agent.handled.length === 1, "handled");
      await runtime.stop();
      // absent flags: a new trace, sampled as a root; null must not read as "parent not sampled"
      expect(tracing.named("civitas.agent.handle")).toHaveLength(1);
    } finally {
      await runtime.stop();
      await tracing.close();
    }
  });
});

describe("checkRuntimeOptions (check-runtime-options.ts)", () => {
  it("refuses a clock without setTimeout at new Runtime(), instead of a TypeError at the first stop or ask", () => {
    // Clock is { now(), setTimeout() }; the check only looks for now().
    throwsWithCode(() => new Runtime({ root: [new Silent("s")], logger: silentLogger, clock: { now: () => Date.now() } as never }), "INVALID_ARGUMENT");
  });
});
