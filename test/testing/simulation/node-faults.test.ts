/**
 * Faults drawn at the nodes of a simulation with several runtimes: a kill
 * drawn at a step hits the node of that step alone (down `killDownMs`, then
 * rebuilt from its store), and a partition drawn at a packet between two
 * nodes cuts their link for `partitionMs`. Both are chosen like any other
 * fault, recorded in the trace and replayed.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { runSimulationScenario } from "../../../src/testing/simulation/run-scenario.js";
import { simulationScenarioArbitrary, type SimulationCommand } from "../../../src/testing/simulation/scenario.js";
import { scheduleArbitrary } from "../../../src/testing/simulation/schedule-arbitrary.js";
import { sequenceChooser } from "../../../src/testing/simulation/sequence-chooser.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { SimulationNodes } from "../../../src/testing/simulation/simulation-node.js";
import type { Simulation, SimulationFaults, SimulationStep, SimulationView } from "../../../src/testing/simulation/types.js";
import type { Supervisor } from "../../../src/supervision/supervisor.js";
import { bankNode, keyedBankNode, shopNode, type KeyedBank, type Payment } from "./fixtures/two-nodes.js";

let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

const checkout: fc.Arbitrary<SimulationCommand> = fc
  .integer({ min: 1, max: 2 })
  .map((n) => ({ label: `checkout(o${n})`, issue: (sim) => sim.ask("shop", "checkout", { orderId: `o${n}`, amount: n }, { timeoutMs: 10_000 }) }));

const payments = (view: SimulationView): Payment[] => view.node("bank").agent<KeyedBank>("bank").state.payments;

/** An order the bank paid more than once (each order is paid once, whatever the checkouts: the keyed bank), or nothing. */
function paidTwice(view: SimulationView): string | undefined {
  const paid = payments(view).map((p) => p.orderId);
  const twice = paid.find((order, i) => paid.indexOf(order) !== i);
  return twice === undefined ? undefined : `order ${twice} paid ${paid.filter((o) => o === twice).length} times`;
}

/** An order the bank paid more often than it was checked out (a shop without idempotency key), or nothing. */
function paidTooOften(view: SimulationView, outcomes: readonly { label: string }[]): string | undefined {
  const paid = payments(view).map((p) => p.orderId);
  for (const order of new Set(paid)) {
    const times = paid.filter((o) => o === order).length;
    const ordered = outcomes.filter((o) => o.label === `checkout(${order})`).length;
    if (times > ordered) return `order ${order} paid ${times} times, checked out ${ordered}`;
  }
  return undefined;
}

type Check = (view: SimulationView, outcomes: readonly { label: string }[]) => string | undefined;

/** The documented property: `scheduleArbitrary()` and scenarios of checkouts, `check`ed once every round settled. */
function property(root: () => Supervisor, nodes: SimulationNodes, faults: SimulationFaults, check: Check) {
  return fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(checkout, { maxCommands: 4 }), async (choices, scenario) => {
    await runSimulationScenario(scenario, { root, nodes, chooser: sequenceChooser(choices), faults, check });
  });
}

// The searches of 20 seeds stop at the first failing run (endOnFailure): shrinking a 200-choice schedule
// through kills and downtimes costs seconds a seed and is not what these tests pin.
const killed: SimulationFaults = { kills: 0.1, killDownMs: 500 };
const partitioned: SimulationFaults = { network: { partition: 0.1, partitionMs: 1_500 } };

describe("faults drawn at the nodes", () => {
  it("a bank that remembers paid keys only in memory pays twice after a drawn kill of its node: found on 20 of 20 seeds", { timeout: 120_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const details = await fc.check(property(shopNode(true), { bank: keyedBankNode("memory") }, killed, paidTwice), { seed, numRuns: 100, endOnFailure: true });
      expect(details.failed, `seed ${seed}`).toBe(true);
      const failure = details.errorInstance as SimulationFailure;
      expect(failure.message).toMatch(/paid 2 times/);
      // The cause: a kill drawn at a step of node bank (not scripted: no op step kills anything).
      expect(failure.trace.some((s) => s.kind === "kill" && s.node === "bank" && s.detail?.startsWith("fault:") === true)).toBe(true);
      expect(failure.trace.some((s) => s.kind === "op" && s.key.includes("kill"))).toBe(false);
    }
  });

  it("without kills the in-memory bank never pays twice (200 runs): the bug needs the drawn kill", { timeout: 60_000 }, async () => {
    await fc.assert(property(shopNode(true), { bank: keyedBankNode("memory") }, {}, paidTwice), { seed: 1, numRuns: 200 });
  });

  it("a bank that keeps paid keys in its checkpointed state never pays twice under drawn node kills (300 runs)", { timeout: 120_000 }, async () => {
    await fc.assert(property(shopNode(true), { bank: keyedBankNode("state") }, killed, paidTwice), { seed: 1, numRuns: 300 });
  });

  it("a shop that retries without an idempotency key pays twice after a drawn partition: found on 20 of 20 seeds", { timeout: 120_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const details = await fc.check(property(shopNode(false), { bank: bankNode }, partitioned, paidTooOften), { seed, numRuns: 100, endOnFailure: true });
      expect(details.failed, `seed ${seed}`).toBe(true);
      const failure = details.errorInstance as SimulationFailure;
      expect(failure.message).toMatch(/paid \d times, checked out \d/);
      expect(failure.trace.some((s) => s.kind === "net.partition" && /bank\|main is cut here/.test(s.detail ?? ""))).toBe(true);
      expect(failure.trace.some((s) => s.kind === "op" && s.key.startsWith("op:partition"))).toBe(false);
    }
  });

  it("with the order as idempotency key, drawn partitions never make the bank pay twice (300 runs)", { timeout: 120_000 }, async () => {
    await fc.assert(property(shopNode(true), { bank: bankNode }, partitioned, paidTooOften), { seed: 1, numRuns: 300 });
  });

  it("a kill drawn at a node while it starts or stops is a kill, not a deadlock: start and stop finish, over 200 seeds", { timeout: 60_000 }, async () => {
    let killedNodes = 0;
    for (let seed = 0; seed < 200; seed++) {
      const sim = simulate({ root: shopNode(true), nodes: { bank: keyedBankNode("state") }, seed, faults: { kills: 0.2, killDownMs: seed % 2 === 0 ? 0 : 300 } });
      current = sim;
      await sim.start();
      void sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }, { timeoutMs: 10_000 }).catch(() => undefined);
      await sim.run();
      await sim.stop();
      current = undefined;
      if (sim.trace.some((s) => s.kind === "kill" && s.node === "bank")) killedNodes++;
    }
    expect(killedNodes).toBeGreaterThanOrEqual(50);
  });

  it("the same seed gives the same trace with drawn node kills and partitions, and replay follows it", { timeout: 60_000 }, async () => {
    const options = { root: shopNode(true), nodes: { bank: keyedBankNode("state") }, faults: { ...killed, kills: 0.05, network: { partition: 0.2 } } };
    const run = async (sim: Simulation): Promise<SimulationStep[]> => {
      current = sim;
      await sim.start();
      for (const n of [1, 2, 3]) void sim.ask("shop", "checkout", { orderId: `o${n}`, amount: n }, { timeoutMs: 10_000 }).catch(() => undefined);
      await sim.run();
      await sim.stop();
      return JSON.parse(JSON.stringify(sim.trace)) as SimulationStep[];
    };
    let seed = 0;
    let first: SimulationStep[] = [];
    // The first seed whose run draws both a kill of node bank and a partition.
    while (!(first.some((s) => s.kind === "kill" && s.node === "bank") && first.some((s) => s.kind === "net.partition"))) {
      seed++;
      expect(seed, "no seed up to 200 draws both faults").toBeLessThanOrEqual(200);
      first = await run(simulate({ ...options, seed }));
    }
    expect(await run(simulate({ ...options, seed }))).toEqual(first);
    expect(await run(replay(first, options))).toEqual(first);
    // The killed node came back: its agent answered after the kill.
    const kill = first.findIndex((s) => s.kind === "kill" && s.node === "bank");
    expect(first.slice(kill + 1).some((s) => s.node === "bank" && s.kind === "deliver")).toBe(true);
  });
});
