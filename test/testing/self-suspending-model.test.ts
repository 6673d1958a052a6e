/**
 * SuspensionModel for an agent that suspends itself (its own handle pauses
 * on some messages, checkpoint-and-return), predicted by `selfSuspends` and
 * checked against a real runtime driven by runLifecycleCommands.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, type Message } from "../../src/index.js";
import { LIFECYCLE_ID_KEY, lifecycleCommandsArbitrary, runLifecycleCommands, SuspensionModel, type LifecycleCommand } from "../../src/entries/testing.js";

/** Every third message (by id) needs an approval: handle keeps it and pauses. */
const needsApproval = (id: number): string | undefined => (id % 3 === 2 ? `approve #${id}` : undefined);

class Approvals extends AgentProcess<{ held: number[] }> {
  override state = { held: [] as number[] };
  override async handle(message: Message): Promise<void> {
    const id = message.payload[LIFECYCLE_ID_KEY] as number;
    const reason = needsApproval(id);
    if (reason === undefined) return;
    this.state.held.push(id);
    this.suspend(reason);
    await this.checkpoint();
  }
}

describe("SuspensionModel of a self-suspending agent", () => {
  it("pauses after a message its selfSuspends names, keeps the rest queued, and handles them after the resume", () => {
    const model = new SuspensionModel({ selfSuspends: needsApproval });
    expect(model.apply({ kind: "send", id: 0 }).result).toBe("handled");
    expect(model.apply({ kind: "send", id: 1 }).result).toBe("handled");
    expect(model.apply({ kind: "ask", id: 2 })).toMatchObject({ result: "handled", status: ProcessStatus.SUSPENDED, suspension: 1, reason: "approve #2", transitions: ["RUNNING->SUSPENDED"] });
    expect(model.apply({ kind: "send", id: 3 }).result).toBe("queued");
    expect(model.apply({ kind: "resume", approver: "valid" })).toMatchObject({ result: "resumed", status: ProcessStatus.RUNNING, suspension: null });
    expect(model.outcome()).toMatchObject({ handled: [0, 1, 2, 3], unhandled: [], asks: { 2: "replied" } });
  });

  it("a resume that lets queued messages through stops at the next one that pauses", () => {
    const commands: LifecycleCommand[] = [{ kind: "suspend", reason: "hold" }, ...[0, 1, 2, 3, 4, 5].map((id): LifecycleCommand => ({ kind: "send", id })), { kind: "resume", approver: "valid" }];
    const outcome = SuspensionModel.run(commands, { selfSuspends: needsApproval });
    expect(outcome.steps.at(-1)).toMatchObject({ result: "resumed", status: ProcessStatus.SUSPENDED, suspension: 2, reason: "approve #2", transitions: ["SUSPENDED->RUNNING", "RUNNING->SUSPENDED"] });
    expect(outcome).toMatchObject({ handled: [0, 1, 2], unhandled: [3, 4, 5] });
  });

  it("refuses a selfSuspends that is not a function, naming what it got", () => {
    expect(() => new SuspensionModel({ selfSuspends: "yes" as unknown as () => undefined })).toThrow(/selfSuspends must be a function .* got string/);
  });

  it("a real runtime does what the model predicts for a self-suspending agent (property)", { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(lifecycleCommandsArbitrary({ maxLength: 25, weights: { selfSuspend: 0, elapse: 0 } }), async (commands) => {
        const observed = await runLifecycleCommands(commands, { createAgent: (name) => new Approvals(name) });
        expect(observed.outcome).toEqual(SuspensionModel.run(commands, { selfSuspends: needsApproval }));
      }),
      { numRuns: 150 },
    );
  });
});
