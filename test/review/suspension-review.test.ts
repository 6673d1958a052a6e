/**
 * Review of durable suspension (SPEC §5, §11; seed FINAL DESIGN S1–S10):
 * ways a business message is handled, or a pause is lost or unaudited,
 * while the agent is (or has asked to be) SUSPENDED.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  createMessage,
  DynamicSupervisor,
  ErrorAction,
  ProcessStatus,
  Supervisor,
  SUSPENSION_KEY,
  type Message,
} from "../../src/index.js";
import { Probe } from "../support/agents.js";
import { gate, Pausable, RecordingStore, rejectsWithCode, rig, teardown, track, turns, waitUntil } from "../suspension/helpers.js";

afterEach(teardown);

const S = ProcessStatus;

describe("priority lane while SUSPENDED", () => {
  it("a business-typed message put on the priority lane through agent.mailbox.put is not handled while SUSPENDED", async () => {
    const agent = new Pausable("a");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    // A public path: the agent's mailbox and createMessage are both exported API.
    await agent.mailbox.put(createMessage({ sender: "x", recipient: "a", payload: { seq: 1 }, priority: 1 }));
    await turns(20);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.entered).toBe(0);
    expect(agent.handled).toEqual([]);
  });
});

describe("stop({ drain: 'all' }) and a pause that was asked for", () => {
  it("a runtime.suspend queued before stop(drain: 'all') keeps the queued business unhandled", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const r = rig(new Supervisor("root", { children: [dyn] }));
    await r.runtime.start();
    const w = await dyn.spawn(Pausable, "w");
    const blocker = gate();
    w.blocker = blocker;
    await r.runtime.send("w", { op: "block", seq: 1 });
    await waitUntil(() => w.entered === 1, "busy");
    // The operator pauses the agent first; its queued business is unapproved from here on.
    const suspending = track(r.runtime.suspend("w", "freeze"));
    await turns(5);
    for (let seq = 2; seq <= 4; seq++) await r.runtime.send("w", { seq });
    const stopping = dyn.stop("w", { drain: "all" });
    await turns(5);
    blocker.open();
    await stopping;
    await waitUntil(() => suspending.state !== "pending", "suspend settled");
    expect(w.handled).toEqual([1]);
  });

  it("a this.suspend() from handle() during a drain-all stop is honoured: no further business is taken", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const r = rig(new Supervisor("root", { children: [dyn] }));
    await r.runtime.start();
    const w = await dyn.spawn(Pausable, "w");
    const blocker = gate();
    w.blocker = blocker;
    await r.runtime.send("w", { op: "block", seq: 1 });
    await waitUntil(() => w.entered === 1, "busy");
    await r.runtime.send("w", { op: "suspend", reason: "approve seq 2", seq: 2 });
    await r.runtime.send("w", { seq: 3 });
    await r.runtime.send("w", { seq: 4 });
    const stopping = dyn.stop("w", { drain: "all" });
    await turns(5);
    blocker.open();
    await stopping;
    // seq 2 asked for a pause: 3 and 4 are business taken after it.
    expect(w.handled).toEqual([1, 2]);
  });
});

/** handle(): asks to pause, then is still busy (an await after suspend(), as in any real handler). */
class SuspendThenBusy extends Pausable {
  readonly busy = gate();
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "suspend-then-busy") return super.handle(message);
    this.entered++;
    this.suspend("approve");
    await this.busy.promise;
    this.handled.push(message.payload.seq as number);
  }
}

describe("a pause asked for from handle() and a graceful runtime.stop()", () => {
  it("is kept: the next runtime on the same store starts SUSPENDED and takes no business", async () => {
    const store = new RecordingStore();
    const first = new SuspendThenBusy("a");
    const r1 = rig([first], { store });
    await r1.runtime.start();
    await r1.runtime.send("a", { op: "suspend-then-busy", seq: 1 });
    await waitUntil(() => first.entered === 1, "handling");
    // The operator stops the runtime gracefully while that handler is finishing.
    const stopping = r1.runtime.stop();
    await turns(5);
    first.busy.open();
    await stopping;
    expect(first.handled).toEqual([1]);

    const second = new Pausable("a");
    const r2 = rig([second], { store });
    await r2.runtime.start();
    await r2.runtime.send("a", { seq: 9 });
    await turns(20);
    expect(second.status).toBe(S.SUSPENDED);
    expect(second.handled).toEqual([]);
    // the pause is announced where it is first entered: receipt, and a marker stored without the flag
    const receipts = r2.audit.ofType("agent.suspend", "a");
    expect(receipts).toHaveLength(1);
    expect(receipts[0]?.details.suspensionId).toBe(second.suspension?.suspensionId);
    expect(await store.marker("a")).not.toHaveProperty("announced");
  });
});

/** Checkpoint-and-return exactly as docs/durable-suspension.md shows it, then a failure after the checkpoint. */
class PayAfterApproval extends Pausable {
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.state.pending = message.payload.invoice ?? null;
    this.suspend(`approve ${String(message.payload.invoice)}`);
    await this.checkpoint(); // action and pause: one atomic write
    throw new Error("the reply could not be sent"); // anything after the checkpoint can fail
  }

  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
}

describe("a pause made durable by a checkpoint before the loop boundary", () => {
  it("still gets its agent.suspend receipt and onSuspend when the agent crashes and restarts into it", async () => {
    const agent = new PayAfterApproval("pay");
    const r = rig(new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }), { tracing: true });
    await r.runtime.start();
    await r.runtime.send("pay", { op: "pay", invoice: "INV-7" });
    await waitUntil(() => agent.incarnation === 2 && agent.status === S.SUSPENDED, "restarted SUSPENDED");
    const marker = agent.suspension!;
    expect(await r.store.marker("pay")).toMatchObject({ suspensionId: marker.suspensionId });
    // The pause is real (stored, restored, listed) — so it must have been announced exactly once.
    const receipts = r.audit.ofType("agent.suspend", "pay");
    expect(receipts.map((e) => e.details.suspensionId)).toEqual([marker.suspensionId]);
    expect(agent.suspends).toEqual(["approve INV-7"]);
    expect(r.tracing!.named("civitas.agent.suspend")).toHaveLength(1);
  });
});

describe("approver validation", () => {
  it("an approver made only of U+0085 (NEXT LINE, Unicode White_Space) is refused with INVALID_APPROVER", async () => {
    const agent = new Pausable("a");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    await rejectsWithCode(r.runtime.resume("a", "\u0085"), "INVALID_APPROVER");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.resumes).toEqual([]);
    expect(Object.hasOwn((await r.store.get("a")) ?? {}, SUSPENSION_KEY)).toBe(true);
  });
});

/** Payments in the documented shape, with a gate before it decides it needs approval. */
class GatedPayments extends Pausable {
  readonly go = gate();
  readonly paid: string[] = [];
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.entered++;
    await this.go.promise; // e.g. asking a policy engine, which answers REQUIRE_APPROVAL
    this.state.pending = message.payload.invoice ?? null;
    this.suspend(`approve ${String(message.payload.invoice)}`);
    await this.checkpoint();
  }

  override async onResume(approver: string): Promise<void> {
    await super.onResume(approver);
    if (typeof this.state.pending !== "string") return;
    this.paid.push(`${this.state.pending} by ${approver}`);
    this.state.pending = null;
    await this.checkpoint();
  }
}

describe("a resume sent while the agent is RUNNING (SPEC 11.9: a no-op)", () => {
  it("does not lift a pause the agent asks for afterwards, and the pending action stays unpaid", async () => {
    const agent = new GatedPayments("pay");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.send("pay", { op: "pay", invoice: "INV-9" });
    await waitUntil(() => agent.entered === 1, "handling");
    // Not suspended, and no pause asked for yet: this resume is a no-op by contract.
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspension).toBeUndefined();
    const resuming = track(r.runtime.resume("pay", "bob"));
    await turns(5);
    agent.go.open(); // only now does the agent decide the payment needs approval
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    await turns(20);
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(r.audit.ofType("agent.resume", "pay")).toEqual([]);
  });
});

describe("settle once across a sibling restart after a resume whose persist failed", () => {
  it("the approved pause is not settled a second time (one agent.resume receipt per suspensionId)", async () => {
    const crasher = new Probe("c0");
    const sleeper = new Pausable("s1");
    const sup = new Supervisor("sup", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [crasher, sleeper] });
    const r = rig(sup);
    await r.runtime.start();
    await r.runtime.suspend("s1", "approval");
    const id = sleeper.suspension!.suspensionId;
    r.store.failSets = true;
    await r.runtime.resume("s1", "alice", { suspensionId: id }); // degraded: RUNNING, the store still holds the marker
    r.store.failSets = false;
    expect(sleeper.status).toBe(S.RUNNING);
    await r.runtime.send("c0", { op: "crash" });
    await waitUntil(() => sleeper.incarnation === 2 && sleeper.status !== S.INITIALIZING && crasher.status === S.RUNNING, "restarted");
    if (sleeper.status === S.SUSPENDED) {
      // The only way back to RUNNING: resume the pause alice already settled.
      await r.runtime.resume("s1", "alice").catch(() => undefined);
    }
    expect(sleeper.status).toBe(S.RUNNING);
    const receipts = r.audit.ofType("agent.resume", "s1").filter((e) => e.details.suspensionId === id);
    expect(receipts).toHaveLength(1);
    // and the store no longer holds the settled pause: a later crash cannot bring it back
    await turns(20);
    expect(await r.store.marker("s1")).toBeUndefined();
  });
});

describe("runtime.stop() while authorizeResume is deciding, with a sibling still stopping", () => {
  it("keeps the pause (as with a lone agent): no receipt, no onResume, no queued business handled after stop() began", async () => {
    const decision = gate();
    let asked = 0;
    const a = new Pausable("a");
    const b = new Pausable("b");
    const r = rig([a, b], {
      authorizeResume: async () => {
        asked++;
        await decision.promise;
        return true;
      },
    });
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    const marker = a.suspension!;
    await r.runtime.send("a", { seq: 1 }); // unapproved business, queued
    const busy = gate();
    b.blocker = busy;
    await r.runtime.send("b", { op: "block", seq: 1 });
    await waitUntil(() => b.entered === 1, "b busy");
    const resuming = track(r.runtime.resume("a", "alice"));
    await waitUntil(() => asked === 1, "authorizeResume called");
    const stopping = track(r.runtime.stop()); // stops b first (reverse order), then a
    await turns(10);
    decision.open();
    await turns(20);
    busy.open();
    await stopping.promise;
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    expect(resuming.state).toBe("rejected"); // the caller is told the resume did not happen…
    // …so nothing of it may have taken effect
    expect(a.resumes).toEqual([]);
    expect(a.handled).toEqual([]);
    expect(r.audit.ofType("agent.resume", "a")).toEqual([]);
    expect(await r.store.marker("a")).toEqual(marker);
  });
});

describe("control while a resume is being authorized", () => {
  it("civitas.eval.halt stops a SUSPENDED agent even while its authorizeResume has not answered", async () => {
    let asked = 0;
    const a = new Pausable("a");
    const r = rig([a], {
      authorizeResume: () => {
        asked++;
        return new Promise<boolean>(() => undefined); // the policy engine never answers
      },
    });
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    const resuming = track(r.runtime.resume("a", "alice"));
    await waitUntil(() => asked === 1, "authorizeResume called");
    expect(a.status).toBe(S.SUSPENDED);
    // The emergency stop of the eval loop: a priority message a SUSPENDED agent must act on (S3).
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    for (let i = 0; i < 5; i++) await r.clock.advance(60_000);
    await turns(20);
    expect(a.status).toBe(S.STOPPED);
    expect(resuming.state).toBe("rejected");
  });
});
