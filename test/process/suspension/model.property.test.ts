/**
 * Model-based property tests of durable suspension, built on `civitas-ts/testing`:
 * generated lifecycle scenarios (up to 40 commands: sends, asks, external and
 * self suspensions, with or without a deadline, resumes and denies with valid,
 * empty, blank and stale approvals, time passing deadlines (expiry),
 * crashes, sibling crashes under ONE_FOR_ALL, process restarts on the same
 * store, shutdown) run against a real Runtime and against `SuspensionModel`.
 *
 * Runs: CIVITAS_PROPERTY_RUNS=5000 npx vitest run test/process/suspension/model.property.test.ts
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  SUSPENSION_KEY,
  type JsonObject,
} from "../../../src/index.js";
import {
  formatCommand,
  lifecycleCommandsArbitrary,
  runLifecycleCommands,
  settle,
  SuspensionModel,
  transitionProblems,
  waitForStatus,
  type LifecycleCommand,
  type LifecycleObservation,
} from "../../../src/entries/testing.js";
import { whenStarted } from "../../support/runtimes.js";
import { Tally } from "./helpers.js";

const RUNS = Number(process.env.CIVITAS_PROPERTY_RUNS ?? 0);

/** A store that yields to the event loop before each write, so persists overlap more of what runs around them. */
class SlowStore extends InMemoryStateStore {
  override async set(name: string, state: JsonObject): Promise<void> {
    await settle();
    return super.set(name, state);
  }
}

/** Ids of the messages sent before the scenario ended (a shutdown ends it). */
function sentIds(commands: readonly LifecycleCommand[], observed: LifecycleObservation): number[] {
  const stoppedAt = observed.outcome.steps.findIndex((s) => s.result === "stopped");
  return commands.flatMap((c, i) => ("id" in c && (stoppedAt < 0 || i < stoppedAt) ? [c.id] : []));
}

/** What holds of every run, however commands interleave. */
function checkSafety(commands: readonly LifecycleCommand[], observed: LifecycleObservation): void {
  const { outcome } = observed;
  // exactly once and in order: no id twice, ids in the order they were sent
  expect(new Set(outcome.handled).size).toBe(outcome.handled.length);
  expect([...outcome.handled].sort((a, b) => a - b)).toEqual(outcome.handled);
  // nothing lost across crash, restart and suspend: each message is handled, crashed the agent, or still waits
  expect([...outcome.handled, ...outcome.crashed, ...outcome.unhandled].sort((a, b) => a - b)).toEqual(sentIds(commands, observed));
  // no business message handled while SUSPENDED (status recorded as handle() is entered)
  expect(observed.entries.filter((e) => e.status !== ProcessStatus.RUNNING)).toEqual([]);
  // every status change legal, and each one starts where the previous one ended
  expect(transitionProblems(observed.transitions)).toEqual([]);
  // no resume without a valid approver, no deny without a valid decider
  for (const event of observed.audit.filter((e) => e.event === "agent.resume")) {
    expect(typeof event.details.approver === "string" && event.details.approver.trim() !== "").toBe(true);
  }
  for (const event of observed.audit.filter((e) => e.event === "agent.deny")) {
    expect(typeof event.details.decider === "string" && event.details.decider.trim() !== "").toBe(true);
  }
  // a pause is settled once: no suspension id is resumed or denied twice
  const settled = observed.audit.filter((e) => e.event === "agent.resume" || e.event === "agent.deny").map((e) => e.details.suspensionId);
  expect(new Set(settled).size).toBe(settled.length);
  outcome.steps.forEach((step, i) => {
    const c = step.command;
    const label = `step ${i} ${formatCommand(c)} -> ${step.result}`;
    const decides = c.kind === "resume" || c.kind === "deny";
    if (decides && (c.approver === "empty" || c.approver === "whitespace")) expect(step.result, label).toBe("INVALID_APPROVER");
    if (decides && c.approver === "stale") expect(step.result, label).toBe("STALE_APPROVAL");
    // only an approval, a denial or a passed deadline ends a pause
    if (step.transitions.includes("SUSPENDED->RUNNING")) expect((decides && c.approver === "valid") || c.kind === "elapse", label).toBe(true);
  });
  expect(observed.logs.filter((line) => !/crashed|not durable|failed a message while STOPPING/.test(line))).toEqual([]);
}

/** What the spec adds when every command settles before the next (the model's setting). */
function checkSettled(observed: LifecycleObservation): void {
  const { outcome } = observed;
  outcome.steps.forEach((step, i) => {
    const label = `step ${i} ${formatCommand(step.command)} -> ${step.result}`;
    const previous = outcome.steps[i - 1];
    // a refused resume changes nothing: the agent stays as it was (SUSPENDED stays SUSPENDED, same suspension)
    if (step.result === "INVALID_APPROVER" || step.result === "STALE_APPROVAL") {
      expect(step.transitions, label).toEqual([]);
      expect([step.status, step.suspension], label).toEqual([previous?.status ?? ProcessStatus.RUNNING, previous?.suspension ?? null]);
    }
    // settle once: each effective resume, deny or expiry leaves one receipt naming the suspension it ended; nothing else leaves one
    const receipts = observed.audit.filter((e) => e.step === i && (e.event === "agent.resume" || e.event === "agent.deny"));
    if (step.result === "resumed" || step.result === "denied" || step.result === "expired") {
      expect(receipts.map((e) => [e.event, e.details.suspensionId, e.details.expired]), label).toEqual([
        [step.result === "resumed" ? "agent.resume" : "agent.deny", observed.suspensionIds[(previous?.suspension ?? 0) - 1], step.result === "resumed" ? undefined : step.result === "expired"],
      ]);
    } else {
      expect(receipts, label).toEqual([]);
    }
  });
  // every suspension was persisted (durable) before it was reported
  for (const event of observed.audit.filter((e) => e.event === "agent.suspend")) expect(event.details.durable).toBe(true);
}

/** What holds when commands overlap (the model cannot say what happens then). */
function checkOverlapping(observed: LifecycleObservation): void {
  const receipts = observed.audit.filter((e) => e.event === "agent.resume");
  const denials = observed.audit.filter((e) => e.event === "agent.deny");
  observed.outcome.steps.forEach((step, i) => {
    const c = step.command;
    const label = `step ${i} ${formatCommand(c)} -> ${step.result}`;
    if (c.kind === "resume") {
      // receipts are told apart by approver (the driver gives each step its own), not by when they were written:
      // a resume that took effect left exactly one receipt; one that was refused (for whatever reason), none
      const own = receipts.filter((e) => e.details.approver === `approver-${i}`);
      expect(own.length, label).toBe(step.result === "resumed" ? 1 : 0);
    } else if (c.kind === "deny") {
      const own = denials.filter((e) => e.details.decider === `approver-${i}`);
      expect(own.length, label).toBe(step.result === "denied" ? 1 : 0);
    } else {
      expect(step.result.startsWith("error:"), label).toBe(false);
    }
  });
  // and no receipt comes from anywhere else
  const resumed = observed.outcome.steps.flatMap((step, i) => (step.command.kind === "resume" && step.result === "resumed" ? [`approver-${i}`] : []));
  expect(receipts.map((e) => e.details.approver).sort()).toEqual(resumed.sort());
}

describe("durable suspension against its reference model (property)", () => {
  it("a real runtime does what SuspensionModel predicts, step by step, for long interleavings", { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(lifecycleCommandsArbitrary({ maxLength: 40 }), async (commands) => {
        const store = new InMemoryStateStore();
        const observed = await runLifecycleCommands(commands, { store, createAgent: (name) => new Tally(name, true) });
        checkSafety(commands, observed);
        checkSettled(observed);
        expect(observed.outcome).toEqual(SuspensionModel.run(commands));
        // the checkpointed state agrees with what was handled (selfSuspend messages never reach Tally.handle)
        const business = new Set(commands.flatMap((c) => (c.kind === "send" || c.kind === "ask" ? [c.id] : [])));
        expect((await store.get("subject"))?.ids ?? []).toEqual(observed.outcome.handled.filter((id) => business.has(id)));
      }),
      { numRuns: RUNS || 600 },
    );
  });

  it("overlapping commands (a suspend during a handle, a resume during a restart …) never break the invariants", { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(lifecycleCommandsArbitrary({ maxLength: 40 }), fc.array(fc.boolean(), { minLength: 41, maxLength: 41 }), async (commands, waits) => {
        const store = new SlowStore();
        const observed = await runLifecycleCommands(commands, { store, createAgent: (name) => new Tally(name, true), settleAfter: (_command, i) => waits[i] ?? true });
        checkSafety(commands, observed);
        checkOverlapping(observed);
        const business = new Set(commands.flatMap((c) => (c.kind === "send" || c.kind === "ask" ? [c.id] : [])));
        expect((await store.get("subject"))?.ids ?? []).toEqual(observed.outcome.handled.filter((id) => business.has(id)));
      }),
      { numRuns: RUNS || 400 },
    );
  });

  it("the model and the runtime agree on a hand-written scenario that touches every command", async () => {
    const commands: LifecycleCommand[] = [
      { kind: "send", id: 0 },
      { kind: "suspend", reason: "review" },
      { kind: "ask", id: 1 },
      { kind: "crash", id: 2 },
      { kind: "selfSuspend", id: 3, reason: "again" },
      { kind: "send", id: 4 },
      { kind: "resume", approver: "whitespace" },
      { kind: "resume", approver: "stale" },
      { kind: "siblingCrash" },
      { kind: "restart" },
      { kind: "resume", approver: "valid", bySuspensionId: true },
      { kind: "resume", approver: "stale" },
      { kind: "suspend", reason: "updated" },
      { kind: "resume", approver: "valid" },
      { kind: "suspend", reason: "no", deadline: false },
      { kind: "deny", approver: "empty" },
      { kind: "deny", approver: "stale" },
      { kind: "send", id: 5 },
      { kind: "deny", approver: "valid", bySuspensionId: true },
      { kind: "deny", approver: "valid" },
      { kind: "suspend", reason: "wait", deadline: true },
      { kind: "restart" },
      { kind: "elapse" },
      { kind: "elapse" },
      { kind: "suspend", reason: "later" },
      { kind: "suspend", reason: "later", deadline: true },
      { kind: "elapse" },
      { kind: "shutdown" },
      { kind: "send", id: 6 },
    ];
    const observed = await runLifecycleCommands(commands);
    checkSafety(commands, observed);
    checkSettled(observed);
    expect(observed.outcome).toEqual(SuspensionModel.run(commands));
    expect(observed.outcome.handled).toEqual([0, 1, 3, 4, 5]);
    expect(observed.outcome.crashed).toEqual([2]);
    expect(observed.outcome.steps.map((s) => s.result).slice(14, 28)).toEqual([
      "suspended",
      "INVALID_APPROVER",
      "STALE_APPROVAL",
      "queued",
      "denied",
      "noop",
      "suspended",
      "restarted",
      "expired",
      "noop",
      "suspended",
      "updated",
      "expired",
      "stopped",
    ]);
    expect(observed.outcome.steps.map((s) => s.suspension)).toEqual([
      null, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, null, 3, 3, 3, 3, null, null, 4, 4, null, null, 5, 5, null, null, null,
    ]);
  });
});

class GatedStore extends InMemoryStateStore {
  gate: Promise<void> | undefined;
  held = false;
  /** Holds the write that clears the marker of 'subject' until the gate opens. */
  override async set(name: string, state: JsonObject): Promise<void> {
    if (this.gate !== undefined && name === "subject" && state[SUSPENSION_KEY] === undefined) {
      this.held = true;
      await this.gate;
    }
    return super.set(name, state);
  }
}

class Crasher extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("boom");
  }
}

describe("regressions found by the overlapping property", () => {
  // Found by the overlapping property: a ONE_FOR_ALL stop that began while the agent.resume
  // receipt and the cleared marker were being written made runtime.resume reject
  // (ILLEGAL_TRANSITION, later MAILBOX_CLOSED) although the resume had taken effect.
  it("a resume overtaken by a supervisor stop is either settled (one receipt, marker gone) or refused without effect", async () => {
    const store = new GatedStore();
    const audit = new MemoryAuditSink();
    const subject = new AgentProcess("subject");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [subject, new Crasher("sibling")] });
    const runtime = await whenStarted(new Runtime({ root, logger: silentLogger, store, auditSink: audit }));
    try {
      await runtime.suspend("subject", "review");
      let open!: () => void;
      store.gate = new Promise<void>((resolve) => (open = resolve));
      const resuming = runtime.resume("subject", "alice").then(
        () => "resolved",
        (error: { code?: string }) => error.code,
      );
      while (!store.held) await settle();
      await runtime.send("sibling", {}); // ONE_FOR_ALL: the subject is stopped while its resume is being written
      await waitForStatus(subject, ProcessStatus.STOPPING, { timeoutMs: 2000 });
      open();
      const result = await resuming;
      await waitForStatus(subject, [ProcessStatus.RUNNING, ProcessStatus.SUSPENDED], { timeoutMs: 2000 });
      const receipts = audit.ofType("agent.resume", "subject").length;
      const marker = (await store.get("subject"))?.[SUSPENSION_KEY];
      if (result === "resolved") {
        expect({ receipts, status: subject.status, marker }).toEqual({ receipts: 1, status: ProcessStatus.RUNNING, marker: undefined });
      } else {
        expect({ result, receipts, status: subject.status, marker: marker !== undefined }).toEqual({
          result,
          receipts: 0,
          status: ProcessStatus.SUSPENDED,
          marker: true,
        });
      }
    } finally {
      await runtime.stop();
    }
  });
});
