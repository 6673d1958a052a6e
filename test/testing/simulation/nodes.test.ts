/**
 * Several runtimes (nodes) under one simulation, joined by the simulated
 * bus: business send and ask between agents of different nodes, one `net`
 * step per packet, remote errors and ask timeouts as over NATS, links cut
 * and healed, a node killed while the others go on; one scheduler and one
 * virtual clock, so a seed (or a trace) decides every cross-node interleaving.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { exhaust } from "../../../src/testing/simulation/exhaust.js";
import { runSimulationScenario } from "../../../src/testing/simulation/run-scenario.js";
import { simulationScenarioArbitrary, type SimulationCommand } from "../../../src/testing/simulation/scenario.js";
import { scheduleArbitrary } from "../../../src/testing/simulation/schedule-arbitrary.js";
import { sequenceChooser } from "../../../src/testing/simulation/sequence-chooser.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Simulation, SimulationOptions, SimulationStep, SimulationView } from "../../../src/testing/simulation/types.js";
import { bankNode, shopNode, type Bank, type Shop } from "./fixtures/two-nodes.js";

/** The simulation of the current test, stopped after it (a failed assertion leaves none running). */
let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

async function started(options: SimulationOptions): Promise<Simulation> {
  current = simulate(options);
  await current.start();
  return current;
}

/** "ok", or the code a call was refused with (and its cause's, for a remote failure). */
function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => "ok",
    (error: unknown) => {
      const e = error as { code?: unknown; cause?: { code?: unknown } };
      return e.cause?.code === undefined ? String(e.code) : `${String(e.code)}/${String(e.cause.code)}`;
    },
  );
}

const payments = (view: SimulationView): Bank["state"]["payments"] => view.node("bank").agent<Bank>("bank").state.payments;

const checkout: fc.Arbitrary<SimulationCommand> = fc
  .integer({ min: 1, max: 5 })
  .map((n) => ({ label: `checkout(o${n})`, issue: (sim) => sim.ask("shop", "checkout", { orderId: `o${n}`, amount: n }, { timeoutMs: 10_000 }) }));

/** An order the bank paid more often than it was checked out, or nothing. */
function paidTooOften(paid: Bank["state"]["payments"], outcomes: readonly { label: string }[]): string | undefined {
  for (const order of new Set(paid.map((p) => p.orderId))) {
    const times = paid.filter((p) => p.orderId === order).length;
    const ordered = outcomes.filter((o) => o.label === `checkout(${order})`).length;
    if (times > ordered) return `order ${order} paid ${times} times, checked out ${ordered}`;
  }
  return undefined;
}

/** No order is paid more often than it was checked out, checked once every round settled; the shop on node main, the bank on node bank. */
function property(idempotent: boolean) {
  return fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(checkout, { maxCommands: 3 }), async (choices, scenario) => {
    await runSimulationScenario(scenario, {
      root: shopNode(idempotent),
      nodes: { bank: bankNode },
      chooser: sequenceChooser(choices),
      faults: { network: { delay: 0.1 } },
      check: (view, outcomes) => paidTooOften(payments(view), outcomes),
    });
  });
}

describe("several runtimes under one simulation", () => {
  it("a retried ask without an idempotency key pays twice: found on 20 of 20 seeds, only across the two nodes", { timeout: 120_000 }, async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const details = await fc.check(property(false), { seed, numRuns: 100 });
      expect(details.failed, `seed ${seed}`).toBe(true);
      const failure = details.errorInstance as SimulationFailure;
      expect(failure.message).toMatch(/paid \d+ times, checked out/);
      // The cause is on the wire between the nodes: a packet held back past the shop's 1 s ask timeout.
      expect(failure.trace.some((s) => s.kind === "net.delay" && s.key.startsWith("net"))).toBe(true);
    }
  });

  it("the same shop and bank in one runtime never pay twice (300 runs): the bug needs the wire between nodes", { timeout: 60_000 }, async () => {
    const together = fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(checkout, { maxCommands: 3 }), async (choices, scenario) => {
      await runSimulationScenario(scenario, {
        root: () => [shopNode(false)(), bankNode()],
        chooser: sequenceChooser(choices),
        faults: { network: { delay: 0.1 } },
        check: (view, outcomes) => paidTooOften(view.agent<Bank>("bank").state.payments, outcomes),
      });
    });
    await fc.assert(together, { seed: 1, numRuns: 300 });
  });

  it("with the order as idempotency key, no order is paid twice (300 runs)", { timeout: 120_000 }, async () => {
    await fc.assert(property(true), { seed: 1, numRuns: 300 });
  });

  it("the same seed gives the same trace across nodes, and replay follows it", async () => {
    const options: SimulationOptions = { root: shopNode(false), nodes: { bank: bankNode }, faults: { network: { delay: 0.2, drop: 0.1, duplicate: 0.1 } } };
    const traces: SimulationStep[][] = [];
    for (let run = 0; run < 2; run++) {
      const sim = await started({ ...options, seed: 11 });
      void outcome(sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }));
      void outcome(sim.node("bank").ask("bank", "count"));
      await sim.run();
      await sim.stop();
      traces.push(JSON.parse(JSON.stringify(sim.trace)) as SimulationStep[]);
    }
    expect(traces[1]).toEqual(traces[0]);
    const nodes = new Set(traces[0]?.map((s) => s.node));
    expect(nodes.has("main") && nodes.has("bank")).toBe(true);
    // Only the bus's own timers (a delayed packet coming back) and the stop of every node name no node.
    expect(traces[0]?.filter((s) => s.node === undefined).every((s) => s.kind === "timer" || s.key === "op:stop")).toBe(true);
    const again = replay(traces[0] as SimulationStep[], options);
    current = again;
    await again.start();
    void outcome(again.ask("shop", "checkout", { orderId: "o1", amount: 1 }));
    void outcome(again.node("bank").ask("bank", "count"));
    await again.run();
    await again.stop();
    expect(JSON.parse(JSON.stringify(again.trace))).toEqual(traces[0]);
  });

  it("send and ask reach agents of another node by name; a remote error comes back as HANDLER_FAILED with its code", async () => {
    const sim = await started({ root: shopNode(true), nodes: { bank: bankNode }, seed: 5 });
    const paid = sim.ask("shop", "checkout", { orderId: "o1", amount: 7 });
    const sent = outcome(sim.send("bank", "note", { orderId: "n1" })); // main -> bank, from outside the tree
    const refused = outcome(sim.ask("bank", "refuse", { orderId: "o2" }));
    const counted = sim.node("bank").ask("bank", "count");
    await sim.run();
    expect(typeof (await paid).payload.receipt).toBe("number");
    expect(await sent).toBe("ok");
    expect(await refused).toBe("HANDLER_FAILED/CARD_DECLINED");
    expect(typeof (await counted).payload.payments).toBe("number");
    expect(payments(sim.view).map((p) => p.orderId).sort()).toEqual(["n1", "o1"]);
    expect(sim.trace.some((s) => s.kind === "net" && s.key.startsWith("net>agent.bank:pay#") && s.node === "bank")).toBe(true);
    expect(sim.trace.some((s) => s.kind === "net" && s.key.startsWith("net<agent._reply.main.") && s.node === "main")).toBe(true);
    // Control across nodes: bank's runtime suspends main's shop through the control protocol.
    const suspended = outcome(sim.node("bank").suspend("shop", "audit"));
    await sim.run();
    expect(await suspended).toBe("ok");
    expect(sim.view.status("shop")).toBe("SUSPENDED");
  });

  it("a cut link loses the packets between its nodes until it is healed: asks across it time out, control requests give up", async () => {
    const sim = await started({ root: shopNode(true), nodes: { bank: bankNode }, seed: 2 });
    sim.partition("main", "bank");
    const cut = outcome(sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }, { timeoutMs: 10_000 }));
    await sim.run();
    expect(await cut).toBe("HANDLER_FAILED/ASK_TIMEOUT"); // three attempts of 1 s, each lost on the cut link
    expect(sim.trace.filter((s) => s.kind === "net.drop" && /bank\|main is cut/.test(s.detail ?? "")).length).toBe(3);
    expect(payments(sim.view)).toEqual([]);
    // Control across the cut: requests are lost too, and the requester gives up by its deadline.
    const control = outcome(sim.node("bank").suspend("shop", "audit", { timeoutMs: 3_000 }));
    await sim.run();
    expect(["AGENT_UNREACHABLE", "CONTROL_TIMEOUT"]).toContain(await control);
    expect(sim.view.status("shop")).toBe("RUNNING");
    sim.heal("main", "bank");
    const healed = outcome(sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }, { timeoutMs: 10_000 }));
    await sim.run();
    expect(await healed).toBe("ok");
    expect(payments(sim.view).map((p) => p.orderId)).toEqual(["o1"]);
  });

  it("a node killed and restarted keeps what its store acknowledged, while the other node goes on", async () => {
    const sim = await started({ root: shopNode(true), nodes: { bank: bankNode }, seed: 4 });
    const first = outcome(sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }));
    await sim.run();
    expect(await first).toBe("ok");
    const during = outcome(sim.ask("shop", "checkout", { orderId: "o2", amount: 2 }, { timeoutMs: 10_000 }));
    await sim.node("bank").kill({ downMs: 1_500 }); // the first two attempts find nobody (the second at +1 s); the third is paid
    await sim.run();
    expect(await during).toBe("ok");
    expect(sim.view.agent<Shop>("shop").state.paid).toEqual(["o1", "o2"]);
    expect(payments(sim.view).map((p) => p.orderId)).toEqual(["o1", "o2"]);
    expect(sim.trace.some((s) => s.kind === "kill" && s.node === "bank")).toBe(true);
    expect(sim.trace.some((s) => s.detail?.includes("nobody subscribes") === true)).toBe(true);
  });

  it("exhaust searches every interleaving of the two nodes' steps, packets included", { timeout: 60_000 }, async () => {
    const explored: number[] = [];
    for (const reduce of [false, true]) {
      const result = await exhaust({
        root: shopNode(true),
        nodes: { bank: bankNode },
        maxSteps: 60,
        reduce,
        scenario: async (sim) => {
          void outcome(sim.ask("shop", "checkout", { orderId: "o1", amount: 1 }));
          void outcome(sim.node("bank").send("bank", "note", { orderId: "n1" }));
          await sim.run();
          if (payments(sim.view).length !== 2) throw new Error(`payments: ${JSON.stringify(payments(sim.view))}`);
        },
      });
      expect(result.failure, `reduce: ${reduce}`).toBeUndefined();
      expect(result.complete).toBe(true);
      explored.push(result.schedules);
    }
    expect(explored[0]).toBeGreaterThan(1); // 6 schedules in full, 3 with sleep sets
    expect(explored[1]).toBeLessThanOrEqual(explored[0] as number);
  });

  it("an unknown node, or a node named main or peer in the options, is refused; node main is the root's runtime", () => {
    expect(() => simulate({ root: shopNode(true), nodes: { main: bankNode } })).toThrow(/cannot name a node/);
    expect(() => simulate({ root: shopNode(true), nodes: { bank: 3 as never } })).toThrow(/must be a function/);
    expect(() => simulate({ root: shopNode(true), nodes: { bank: bankNode } }).node("nope")).toThrow(/no such node; the nodes are main, bank/);
    const sim = simulate({ root: shopNode(true), nodes: { bank: bankNode } });
    expect(sim.node("main").view).toBe(sim.view); // the root's runtime is node "main"
    expect(sim.node("bank").name).toBe("bank");
  });
});
