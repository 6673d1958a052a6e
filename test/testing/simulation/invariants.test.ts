import { describe, expect, it } from "vitest";
import type { ProcessRunner } from "../../../src/process/process-runner.js";
import { ProcessStatus } from "../../../src/contracts/process-status.js";
import { BuiltInInvariants } from "../../../src/testing/simulation/built-in-invariants.js";
import { AuditLog } from "../../../src/testing/simulation/simulated-audit-sink.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import { bank, type Ledger } from "./fixtures.js";

/** A runner as the delivery check reads it: a name, a status and a count of business messages taken. */
function fakeRunner(status: ProcessStatus): { runner: ProcessRunner; take: () => void } {
  const box = { businessTakenCount: 0 };
  const runner = { agent: { name: "payer" }, currentStatus: status, box } as unknown as ProcessRunner;
  return { runner, take: () => void box.businessTakenCount++ };
}

describe("the runtime's own invariants", () => {
  it("a business message taken by an agent that stayed SUSPENDED through the step is reported", () => {
    const invariants = new BuiltInInvariants(new AuditLog());
    const { runner, take } = fakeRunner(ProcessStatus.SUSPENDED);
    const watched = invariants.watch(runner);
    take();
    invariants.checkDelivery(watched as NonNullable<typeof watched>);
    expect(invariants.check()).toEqual({ name: "nothing-handled-while-suspended", text: "'payer' took a business message while SUSPENDED" });
  });

  it("one taken in the step that resumed the agent is not", () => {
    const invariants = new BuiltInInvariants(new AuditLog());
    const { runner, take } = fakeRunner(ProcessStatus.SUSPENDED);
    const watched = invariants.watch(runner);
    invariants.transition("payer", ProcessStatus.SUSPENDED, ProcessStatus.RUNNING);
    take();
    invariants.checkDelivery(watched as NonNullable<typeof watched>);
    expect(invariants.check()).toBeUndefined();
  });

  it("an illegal status transition is reported", () => {
    const invariants = new BuiltInInvariants(new AuditLog());
    invariants.transition("payer", ProcessStatus.CRASHED, ProcessStatus.RUNNING);
    expect(invariants.check()).toEqual({ name: "legal-transitions", text: "'payer' went from CRASHED to RUNNING, which is not a legal transition" });
  });

  it("a pause settled twice (a resume, then a deny) is reported; settling two pauses once each is not", () => {
    const log = new AuditLog();
    const invariants = new BuiltInInvariants(log);
    const receipt = (event: string, suspensionId: string): void =>
      void log.acknowledged.push({ event, agent: "payer", ts: "2023-11-14T22:13:20.000Z", signerId: "civitas-runtime", details: { suspensionId } });
    receipt("agent.resume", "s1");
    receipt("agent.resume", "s2");
    expect(invariants.check()).toBeUndefined();
    receipt("agent.deny", "s1");
    expect(invariants.check()?.text).toBe("the pause s1 of 'payer' was settled twice: agent.resume, then agent.deny");
  });
});

describe("user invariants", () => {
  it("one that throws fails the run with its error, named after the function, at the step after which it failed", async () => {
    const sim = simulate({
      root: bank,
      seed: 1,
      invariants: [
        function noDeposits(view) {
          if (view.agent<Ledger>("ledger").state.accounts.x !== 50) throw new Error("x changed");
        },
      ],
    });
    await sim.start();
    void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
    const failure = await sim.run().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SimulationFailure);
    const trace = (failure as SimulationFailure).trace;
    expect(trace.at(-1)).toMatchObject({ kind: "invariant", key: "invariant:noDeposits", detail: "Error: x changed" });
    expect(trace.at(-2)).toMatchObject({ kind: "deliver", key: "ledger<-coord-a:set#3" });
    expect((failure as SimulationFailure).failedAt).toBe(trace.length - 1);
    expect((failure as SimulationFailure).message).toContain(`>> #${trace.length - 1} invariant`);
  });
});
