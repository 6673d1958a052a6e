/**
 * Fault points in user code (issue 27): `faultPoint(name)` is a no-op
 * outside the simulation; under it, with `faults.points`, a step where the
 * agent may crash, get an error or be held. A crash planted between a
 * handler's two sends is found through a fault point on 20 of 20 seeds;
 * targeted faults (by agent, message type, point, occurrence) and audit-sink
 * faults apply where they are aimed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess } from "../../../src/process/agent-process.js";
import type { Message } from "../../../src/message/message.js";
import { Runtime } from "../../../src/runtime/runtime.js";
import { faultPoint } from "../../../src/runtime/fault-point.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { runSimulationScenario } from "../../../src/testing/simulation/run-scenario.js";
import { simulationScenarioArbitrary, type SimulationCommand } from "../../../src/testing/simulation/scenario.js";
import { scheduleArbitrary } from "../../../src/testing/simulation/schedule-arbitrary.js";
import { sequenceChooser } from "../../../src/testing/simulation/sequence-chooser.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { SimulationFaults, SimulationView } from "../../../src/testing/simulation/types.js";
import { Payer, TwoAccountBooks } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

/** A balance, changed by `debit` and `credit` (sent, not asked). */
class Balance extends AgentProcess<{ balance: number }> {
  override state = { balance: 100 };
  override async handle(message: Message): Promise<void> {
    const amount = Number(message.payload.amount);
    this.state.balance += message.type === "credit" ? amount : -amount;
    await this.checkpoint();
  }
}

/** The planted bug: a debit, a fault point, then the credit; a crash in between loses the money. */
class SplitTransfer extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    await this.send("alice", message.payload, { type: "debit" });
    await faultPoint("between-sends");
    await this.send("bob", message.payload, { type: "credit" });
  }
}

/** The fix: one message that the ledger applies whole; the point after it is harmless. */
class WholeTransfer extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    await this.send("ledger", message.payload, { type: "move" });
    await faultPoint("after-send");
  }
}

const buggyRoot = (): Supervisor => new Supervisor("bank", { children: [new Balance("alice"), new Balance("bob"), new SplitTransfer("coord")] });
const fixedRoot = (): Supervisor => new Supervisor("bank", { children: [new TwoAccountBooks("ledger"), new WholeTransfer("coord")] });

function total(view: SimulationView, fixed: boolean): number {
  if (fixed) {
    const { alice, bob } = view.agent<TwoAccountBooks>("ledger").state;
    return alice + bob;
  }
  return view.agent<Balance>("alice").state.balance + view.agent<Balance>("bob").state.balance;
}

const transfer: fc.Arbitrary<SimulationCommand> = fc.integer({ min: 1, max: 30 }).map((amount) => ({ label: `transfer(${amount})`, issue: (sim) => sim.send("coord", "transfer", { amount }) }));

function property(fixed: boolean, faults: SimulationFaults) {
  return fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(transfer, { maxCommands: 4 }), async (choices, scenario) => {
    await runSimulationScenario(scenario, {
      root: fixed ? fixedRoot : buggyRoot,
      chooser: sequenceChooser(choices),
      faults,
      check: (view) => (total(view, fixed) === 200 ? undefined : `money created or lost: ${total(view, fixed)}`),
    });
  });
}

describe("faultPoint(name)", () => {
  it("does nothing outside a simulation, and refuses a name that is not a non-empty string", async () => {
    class Pointed extends AgentProcess {
      override async handle(): Promise<Message> {
        await faultPoint("before-reply");
        return this.reply({ passed: true });
      }
    }
    const runtime = await whenStarted(new Runtime({ root: new Pointed("p"), keepAlive: false }));
    expect((await runtime.ask("p", {})).payload).toEqual({ passed: true });
    await runtime.stop();
    await expect(faultPoint("x")).resolves.toBeUndefined();
    await expect(faultPoint("")).rejects.toThrow(/faultPoint\(name\): name must be a non-empty string/);
  });

  it("is a step of its own under faults.points, keyed by agent, name and occurrence", async () => {
    const sim = await whenStarted(simulate({ root: buggyRoot, seed: 3, faults: { points: {} } }));
    void sim.send("coord", "transfer", { amount: 5 });
    void sim.send("coord", "transfer", { amount: 6 });
    await sim.run();
    expect(sim.trace.filter((s) => s.kind === "point").map((s) => s.key)).toEqual(["point:coord:between-sends#1", "point:coord:between-sends#2"]);
    await sim.stop();
    // Without the option a point is no step: the schedules of code without points are unchanged.
    const plain = await whenStarted(simulate({ root: buggyRoot, seed: 3 }));
    void plain.send("coord", "transfer", { amount: 5 });
    await plain.run();
    expect(plain.trace.some((s) => s.kind === "point")).toBe(false);
    await plain.stop();
  });

  it("finds the crash planted between a handler's two sends on 20 of 20 seeds; the fix passes 300 runs", { timeout: 120_000 }, async () => {
    const faults = { points: { crash: 0.2 } };
    for (let seed = 1; seed <= 20; seed++) {
      const details = await fc.check(property(false, faults), { seed, numRuns: 100 });
      expect(details.failed, `seed ${seed}`).toBe(true);
      expect(String(details.errorInstance)).toMatch(/money created or lost/);
      expect((details.errorInstance as SimulationFailure).trace.some((s) => s.kind === "point.crash" && s.key.startsWith("point:coord:between-sends"))).toBe(true);
    }
    await fc.assert(property(true, faults), { seed: 5, numRuns: 300 });
  });

  it("throws SIMULATED_FAULT where the handler may catch it, and holds the agent in virtual time", async () => {
    class Careful extends AgentProcess<{ caught: string[]; done: number }> {
      override state = { caught: [] as string[], done: 0 };
      override async handle(): Promise<void> {
        try {
          await faultPoint("call");
        } catch (error) {
          this.state.caught.push((error as { code: string }).code);
        }
        this.state.done += 1;
      }
    }
    const sim = await whenStarted(simulate({ root: () => new Careful("c"), seed: 1, startMs: 0, faults: { targets: [{ fault: "point.throw", point: "call", occurrence: 1 }, { fault: "point.delay", point: "call", occurrence: 2 }], points: { delayMs: 700 } } }));
    void sim.send("c", "go");
    void sim.send("c", "go");
    await sim.idle();
    expect(sim.view.agent<Careful>("c").state).toEqual({ caught: ["SIMULATED_FAULT"], done: 1 });
    await sim.run(); // the held point goes on once virtual time reaches it
    expect(sim.view.agent<Careful>("c").state).toEqual({ caught: ["SIMULATED_FAULT"], done: 2 });
    expect(sim.view.now).toBe(700);
    expect(sim.trace.filter((s) => s.kind.startsWith("point")).map((s) => `${s.kind} ${s.key}`)).toEqual(["point.throw point:c:call#1", "point.delay point:c:call#2"]);
    await sim.stop();
  });
});

describe("targeted faults", () => {
  it("crash bob when he takes his first credit: exactly there, whatever the seed", async () => {
    for (let seed = 0; seed < 20; seed++) {
      const sim = await whenStarted(simulate({ root: buggyRoot, seed, faults: { targets: [{ fault: "crash", agent: "bob", type: "credit", occurrence: 1 }] } }));
      void sim.send("coord", "transfer", { amount: 5 });
      void sim.send("coord", "transfer", { amount: 7 });
      await sim.run();
      const crashes = sim.trace.filter((s) => s.kind === "crash").map((s) => s.key);
      expect(crashes).toEqual(["bob<-coord:credit#1"]);
      await sim.stop();
    }
  });

  it("refuses a target with an unknown fault or a bad occurrence, naming it", () => {
    expect(() => simulate({ root: buggyRoot, faults: { targets: [{ fault: "melt" as never }] } })).toThrow(/faults.targets\[0\] needs a fault/);
    expect(() => simulate({ root: buggyRoot, faults: { targets: [{ fault: "crash", occurrence: 0 }] } })).toThrow(/faults.targets\[0\].occurrence must be a positive integer/);
  });
});

describe("audit-sink faults", () => {
  async function approve(faults: SimulationFaults): Promise<{ outcome: string; receipts: number; status: string | undefined }> {
    const sim = await whenStarted(simulate({ root: () => new Supervisor("root", { children: [new Payer("payer")] }), seed: 2, faults }));
    void sim.send("payer", "pay", { amount: 5 });
    await sim.idle();
    const outcome = sim.resume("payer", "alice").then(() => "ok", (error: { code: string }) => error.code);
    await sim.idle();
    const result = { outcome: await Promise.race([outcome, Promise.resolve("pending")]), receipts: sim.view.audit.filter((e) => e.event === "agent.resume").length, status: sim.view.status("payer") };
    await sim.stop().catch(() => undefined); // a hung append may keep the stop from finishing: that ends the simulation too
    return result;
  }

  it("a failed append refuses the resume with AUDIT_UNAVAILABLE; a hung one never settles it; a lost one is acknowledged and never kept", async () => {
    expect(await approve({ targets: [{ fault: "audit.fail", type: "agent.resume" }] })).toEqual({ outcome: "AUDIT_UNAVAILABLE", receipts: 0, status: "SUSPENDED" });
    expect(await approve({ targets: [{ fault: "audit.hang", type: "agent.resume" }] })).toEqual({ outcome: "pending", receipts: 0, status: "SUSPENDED" });
    const lost = await approve({ targets: [{ fault: "audit.lose", type: "agent.resume" }] });
    expect(lost).toMatchObject({ outcome: "ok", receipts: 0 });
  });
});
