import { describe, expect, it } from "vitest";
import { ProcessStatus } from "../../src/index.js";
import { formatCommand, SuspensionModel, type LifecycleCommand, type LifecycleStep } from "../../src/entries/testing.js";

/** `[result, status, suspension]` of each step. */
function brief(steps: readonly LifecycleStep[]): Array<[string, string, number | null]> {
  return steps.map((s) => [s.result, s.status, s.suspension]);
}

const { RUNNING, SUSPENDED, STOPPED } = ProcessStatus;

describe("SuspensionModel", () => {
  it("a running agent handles messages at once, in order", () => {
    const outcome = SuspensionModel.run([
      { kind: "send", id: 0 },
      { kind: "ask", id: 1 },
      { kind: "send", id: 2 },
    ]);
    expect(brief(outcome.steps)).toEqual([
      ["handled", RUNNING, null],
      ["handled", RUNNING, null],
      ["handled", RUNNING, null],
    ]);
    expect(outcome).toMatchObject({ handled: [0, 1, 2], unhandled: [], crashed: [], asks: { 1: "replied" }, stored: null });
  });

  it("a suspended agent keeps business messages queued, in order, until a valid resume", () => {
    const model = new SuspensionModel();
    expect(model.apply({ kind: "suspend", reason: "review" })).toMatchObject({ result: "suspended", status: SUSPENDED, suspension: 1, reason: "review", transitions: ["RUNNING->SUSPENDED"] });
    expect(model.apply({ kind: "send", id: 0 }).result).toBe("queued");
    expect(model.apply({ kind: "ask", id: 1 }).result).toBe("queued");
    expect(model.queued).toEqual([0, 1]);
    expect(model.outcome().asks).toEqual({ 1: "pending" });
    expect(model.apply({ kind: "resume", approver: "valid" })).toMatchObject({ result: "resumed", status: RUNNING, suspension: null, transitions: ["SUSPENDED->RUNNING"] });
    expect(model.outcome()).toMatchObject({ handled: [0, 1], unhandled: [], asks: { 1: "replied" } });
  });

  it("refuses blank approvers with INVALID_APPROVER and stale ones with STALE_APPROVAL, changing nothing", () => {
    const steps = SuspensionModel.run([
      { kind: "resume", approver: "empty" },
      { kind: "resume", approver: "stale" },
      { kind: "suspend", reason: "r" },
      { kind: "send", id: 0 },
      { kind: "resume", approver: "empty" },
      { kind: "resume", approver: "whitespace" },
      { kind: "resume", approver: "stale" },
    ]).steps;
    expect(brief(steps)).toEqual([
      ["INVALID_APPROVER", RUNNING, null],
      ["STALE_APPROVAL", RUNNING, null],
      ["suspended", SUSPENDED, 1],
      ["queued", SUSPENDED, 1],
      ["INVALID_APPROVER", SUSPENDED, 1],
      ["INVALID_APPROVER", SUSPENDED, 1],
      ["STALE_APPROVAL", SUSPENDED, 1],
    ]);
    for (const step of steps.filter((s) => s.result !== "suspended")) expect(step.transitions).toEqual([]);
  });

  it("a valid resume of a running agent is a no-op, with or without a suspension id", () => {
    const steps = SuspensionModel.run([
      { kind: "resume", approver: "valid" },
      { kind: "resume", approver: "valid", bySuspensionId: true },
    ]).steps;
    expect(steps.map((s) => [s.result, s.transitions])).toEqual([
      ["noop", []],
      ["noop", []],
    ]);
  });

  it("suspending a suspended agent keeps the suspension and updates the reason; a new pause gets a new number", () => {
    const outcome = SuspensionModel.run([
      { kind: "suspend", reason: "a" },
      { kind: "suspend", reason: "b" },
      { kind: "resume", approver: "valid", bySuspensionId: true },
      { kind: "selfSuspend", id: 0, reason: "c" },
      { kind: "suspend", reason: "d" },
    ]);
    expect(outcome.steps.map((s) => [s.result, s.suspension, s.reason])).toEqual([
      ["suspended", 1, "a"],
      ["updated", 1, "b"],
      ["resumed", null, null],
      ["handled", 2, "c"],
      ["updated", 2, "d"],
    ]);
    expect(outcome.steps[3]?.transitions).toEqual(["RUNNING->SUSPENDED"]);
    expect(outcome.handled).toEqual([0]);
  });

  it("a self-suspend handled in the middle of a backlog stops the backlog after it", () => {
    const model = new SuspensionModel();
    model.apply({ kind: "suspend", reason: "outer" });
    model.apply({ kind: "send", id: 0 });
    model.apply({ kind: "selfSuspend", id: 1, reason: "inner" });
    model.apply({ kind: "send", id: 2 });
    const step = model.apply({ kind: "resume", approver: "valid" });
    expect(step).toMatchObject({ result: "resumed", status: SUSPENDED, suspension: 2, reason: "inner", transitions: ["SUSPENDED->RUNNING", "RUNNING->SUSPENDED"] });
    expect(model.outcome()).toMatchObject({ handled: [0, 1], unhandled: [2] });
  });

  it("a crash restarts a running agent at once; a suspended agent reaches it only after a resume", () => {
    const model = new SuspensionModel();
    expect(model.apply({ kind: "crash", id: 0 })).toMatchObject({
      result: "handled",
      status: RUNNING,
      transitions: ["RUNNING->CRASHED", "CRASHED->INITIALIZING", "INITIALIZING->RUNNING"],
    });
    model.apply({ kind: "suspend", reason: "r" });
    expect(model.apply({ kind: "crash", id: 1 })).toMatchObject({ result: "queued", status: SUSPENDED, transitions: [] });
    model.apply({ kind: "send", id: 2 });
    expect(model.apply({ kind: "resume", approver: "valid" }).transitions).toEqual([
      "SUSPENDED->RUNNING",
      "RUNNING->CRASHED",
      "CRASHED->INITIALIZING",
      "INITIALIZING->RUNNING",
    ]);
    expect(model.outcome()).toMatchObject({ crashed: [0, 1], handled: [2], unhandled: [] });
  });

  it("a sibling crash and a process restart bring the agent back as it was, suspension and queue included", () => {
    const outcome = SuspensionModel.run([
      { kind: "suspend", reason: "r" },
      { kind: "send", id: 0 },
      { kind: "siblingCrash" },
      { kind: "restart" },
      { kind: "siblingCrash" },
    ]);
    expect(outcome.steps.slice(2).map((s) => [s.result, s.status, s.suspension, s.reason, s.transitions])).toEqual([
      ["restarted", SUSPENDED, 1, "r", ["SUSPENDED->STOPPING", "STOPPING->STOPPED", "STOPPED->INITIALIZING", "INITIALIZING->SUSPENDED"]],
      ["restarted", SUSPENDED, 1, "r", ["SUSPENDED->STOPPING", "STOPPING->STOPPED", "INITIALIZING->SUSPENDED"]],
      ["restarted", SUSPENDED, 1, "r", ["SUSPENDED->STOPPING", "STOPPING->STOPPED", "STOPPED->INITIALIZING", "INITIALIZING->SUSPENDED"]],
    ]);
    expect(outcome).toMatchObject({ handled: [], unhandled: [0], stored: 1 });
    expect(SuspensionModel.run([{ kind: "restart" }]).steps[0]?.transitions).toEqual(["RUNNING->STOPPING", "STOPPING->STOPPED", "INITIALIZING->RUNNING"]);
  });

  it("shutdown ends the scenario: asks still queued are refused with RUNTIME_STOPPED, the pause stays stored, later commands are ignored", () => {
    const outcome = SuspensionModel.run([
      { kind: "ask", id: 0 },
      { kind: "suspend", reason: "r" },
      { kind: "ask", id: 1 },
      { kind: "shutdown" },
      { kind: "resume", approver: "valid" },
      { kind: "send", id: 2 },
    ]);
    expect(brief(outcome.steps)).toEqual([
      ["handled", RUNNING, null],
      ["suspended", SUSPENDED, 1],
      ["queued", SUSPENDED, 1],
      ["stopped", STOPPED, 1],
      ["ignored", STOPPED, 1],
      ["ignored", STOPPED, 1],
    ]);
    expect(outcome.steps[3]?.transitions).toEqual(["SUSPENDED->STOPPING", "STOPPING->STOPPED"]);
    expect(outcome).toMatchObject({ asks: { 0: "replied", 1: "RUNTIME_STOPPED" }, unhandled: [1], stored: 1 });
  });

  it("leaves asks pending when the scenario ends without a shutdown", () => {
    const outcome = SuspensionModel.run([{ kind: "suspend", reason: "" }, { kind: "ask", id: 0 }]);
    expect(outcome.asks).toEqual({ 0: "pending" });
    expect(outcome.stored).toBe(1);
  });

  it("outcome() is a snapshot: applying more commands does not change an outcome already taken", () => {
    const model = new SuspensionModel();
    model.apply({ kind: "send", id: 0 });
    const before = model.outcome();
    model.apply({ kind: "send", id: 1 });
    expect(before.handled).toEqual([0]);
    expect(before.steps).toHaveLength(1);
  });

  it("refuses a reused or non-integer id, and an unknown command", () => {
    const model = new SuspensionModel();
    model.apply({ kind: "send", id: 0 });
    expect(() => model.apply({ kind: "ask", id: 0 })).toThrow(TypeError);
    expect(() => model.apply({ kind: "send", id: 1.5 })).toThrow(/integer id/);
    expect(() => model.apply({ kind: "explode" } as unknown as LifecycleCommand)).toThrow(/unknown command/);
    expect(() => model.apply({ kind: "resume", approver: "maybe" } as unknown as LifecycleCommand)).toThrow(/unknown approver/);
  });

  it("formatCommand names each command readably", () => {
    expect(
      [
        { kind: "send", id: 3 },
        { kind: "selfSuspend", id: 4, reason: "x" },
        { kind: "suspend", reason: "" },
        { kind: "resume", approver: "valid", bySuspensionId: true },
        { kind: "resume", approver: "stale" },
        { kind: "siblingCrash" },
      ].map((c) => formatCommand(c as LifecycleCommand)),
    ).toEqual(["send#3", 'selfSuspend#4("x")', 'suspend("")', "resume(valid, bySuspensionId)", "resume(stale)", "siblingCrash"]);
  });
});
