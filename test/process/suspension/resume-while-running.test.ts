/**
 * A resume sent while the agent is RUNNING is a no-op (SPEC 11.9): it lifts no
 * pause asked for before or after it.
 *
 * Each test pins a defect found by the review of durable suspension (SPEC §5,
 * §11) (these tests were in test/review/suspension-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, type JsonValue, type Message, ErrorAction, Supervisor } from "../../../src/index.js";
import { Pausable, startedRig, teardown, type Rig } from "./helpers.js";
import { gate, turns, waitUntil } from "../../support/agents.js";
import { track } from "../../support/outcome.js";

afterEach(teardown);

const S = ProcessStatus;

/**
 * A payments agent in the documented shape: a `pay` message is counted in
 * `entered` and handed to {@link pay}, which stores the invoice as `pending`
 * and suspends, waiting on `go` at a point of its own; `onResume` pays the
 * pending invoice (into `paid`) and, with `checkpointsPayment`, checkpoints.
 */
abstract class PaymentsAgent extends Pausable {
  readonly go = gate();
  readonly paid: string[] = [];
  protected checkpointsPayment = true;

  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.entered++;
    await this.pay(message.payload.invoice);
  }

  protected abstract pay(invoice: JsonValue | undefined): Promise<void>;

  override async onResume(approver: string): Promise<void> {
    await super.onResume(approver);
    if (typeof this.state.pending !== "string") return;
    this.paid.push(`${this.state.pending} by ${approver}`);
    this.state.pending = null;
    if (this.checkpointsPayment) await this.checkpoint();
  }
}

/** Payments with a gate before it decides it needs approval. */
class GatedPayments extends PaymentsAgent {
  protected override async pay(invoice: JsonValue | undefined): Promise<void> {
    await this.go.promise; // e.g. asking a policy engine, which answers REQUIRE_APPROVAL
    this.state.pending = invoice ?? null;
    this.suspend(`approve ${String(invoice)}`);
    await this.checkpoint();
  }
}

/**
 * Sends `agent` ("pay", on a started rig) its payment and waits until it is
 * handling it (RUNNING, held on its `go` gate). `root` defaults to the agent alone.
 */
async function handlingPayment(agent: PaymentsAgent, invoice: string, root: Supervisor | PaymentsAgent[] = [agent]): Promise<Rig> {
  const r = await startedRig(root);
  await r.runtime.send("pay", { op: "pay", invoice });
  await waitUntil(() => agent.entered === 1, "handling");
  return r;
}

/**
 * While `agent` is held in its handler, sends a resume by bob (a no-op on a
 * running agent), then opens the gate; resolves once the resume has settled
 * (after `afterOpen`, when given) and the runtime is quiet again.
 */
async function resumeThenOpen(r: Rig, agent: PaymentsAgent, afterOpen?: () => Promise<void>): Promise<void> {
  const resuming = track(r.runtime.resume("pay", "bob"));
  await turns(5);
  agent.go.open();
  await afterOpen?.();
  await waitUntil(() => resuming.state !== "pending", "resume settled");
  await turns(20);
}

describe("a resume sent while the agent is RUNNING (SPEC 11.9: a no-op)", () => {
  it("does not lift a pause the agent asks for afterwards, and the pending action stays unpaid", async () => {
    const agent = new GatedPayments("pay");
    const r = await handlingPayment(agent, "INV-9");
    // Not suspended, and no pause asked for yet: this resume is a no-op by contract.
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspension).toBeUndefined();
    await resumeThenOpen(r, agent); // only once its gate opens does the agent decide the payment needs approval
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(r.audit.ofType("agent.resume", "pay")).toEqual([]);
  });
});

/**
 * The documented "store the action, suspend(), checkpoint()" handler; its
 * notification to the approver (after the checkpoint) may fail, which crashes it.
 * onResume pays the pending action.
 */
class CrashyPayments extends PaymentsAgent {
  failNotify = true;
  protected override async pay(invoice: JsonValue | undefined): Promise<void> {
    this.state.pending = invoice ?? null;
    this.suspend(`approve ${String(invoice)}`);
    await this.checkpoint();
    await this.go.promise; // e.g. notifying the approval queue
    if (this.failNotify) throw new Error("approval queue unreachable");
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
}

describe("a resume sent while RUNNING (SPEC 11.9: a no-op) and a crash-restart", () => {
  it("does not lift the pause the running handler asked for when the handler crashes and the agent restarts into that pause", async () => {
    const agent = new CrashyPayments("pay");
    const r = await handlingPayment(agent, "INV-1", new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }));
    // What an approver can see: RUNNING, no pause listed. A resume now is a no-op by contract.
    expect(agent.status).toBe(S.RUNNING);
    expect(r.runtime.listSuspended()).toEqual([]);
    // Once its gate opens the handler crashes; the pause it asked for was stored with the pending action.
    await resumeThenOpen(r, agent, () => waitUntil(() => agent.incarnation === 2 && agent.status !== S.INITIALIZING, "restarted"));
    // Without the crash the same resume is dropped (test/review/diff-review.test.ts); the crash must not change that.
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(r.audit.ofType("agent.resume", "pay")).toEqual([]);
  });
});

/** The documented "store the action, suspend(), checkpoint(), return" handler, whose checkpoint takes a while. */
class SlowCheckpointPayments extends PaymentsAgent {
  protected override checkpointsPayment = false;
  protected override async pay(invoice: JsonValue | undefined): Promise<void> {
    this.state.pending = invoice ?? null;
    this.suspend(`approve ${String(invoice)}`);
    await this.go.promise; // e.g. a checkpoint to a busy store
    await this.checkpoint();
  }
}

describe("a resume sent while RUNNING (SPEC 11.9: a no-op) and a pause asked for earlier in the handler", () => {
  it("does not lift a pause asked for earlier in the running handler, which no caller could see yet", async () => {
    const agent = new SlowCheckpointPayments("pay");
    const r = await handlingPayment(agent, "INV-1");
    // What an approver can see: RUNNING, no pause, nothing listed.
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspension).toBeUndefined();
    expect(r.runtime.listSuspended()).toEqual([]);
    await resumeThenOpen(r, agent); // the resume is by contract a no-op on a running agent
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
  });
});
