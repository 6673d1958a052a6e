/**
 * Deadlock detection and the runtime's own invariants cover every node of
 * a simulation with several runtimes, not only the main one.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Message } from "../../../src/message/message.js";
import { AgentProcess } from "../../../src/process/agent-process.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Simulation, SimulationOptions } from "../../../src/testing/simulation/types.js";
import { bankNode, shopNode } from "./fixtures/two-nodes.js";

let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

/** Asks `peer` on every message, and answers once it has its answer: two of them asking each other wait forever. */
class Asker extends AgentProcess {
  constructor(
    name: string,
    private readonly peer: string,
  ) {
    super(name);
  }

  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "answer") return this.reply({});
    await this.ask(this.peer, {}, { type: message.type === "go" ? "back" : "answer", timeoutMs: 60_000 });
    return message.replyTo === undefined ? undefined : this.reply({});
  }
}

/** Pauses itself on `pay`, holding the payment for approval. */
class Holder extends AgentProcess {
  override async handle(): Promise<void> {
    this.suspend("review");
  }
}

const tree = (...children: AgentProcess[]) => () => new Supervisor(`${children[0]?.name ?? "x"}-root`, { children });

async function failure(options: SimulationOptions, act: (sim: Simulation) => void): Promise<SimulationFailure> {
  current = simulate(options);
  await current.start();
  act(current);
  return current.run().then(
    () => {
      throw new Error("the run passed");
    },
    (error: unknown) => error as SimulationFailure,
  );
}

describe("checks on every node", () => {
  it("two agents of a node other than main that ask each other are a deadlock, found before their asks time out", async () => {
    const failed = await failure({ root: shopNode(true), nodes: { bank: bankNode, ring: tree(new Asker("ping", "pong"), new Asker("pong", "ping")) }, seed: 1 }, (sim) => {
      void sim.node("ring").send("ping", "go");
    });
    expect(failed.code).toBe("SIMULATION_DEADLOCK");
    expect(failed.message).toMatch(/agents wait on each other: (ping asks pong \(back\) -> pong asks ping \(answer\)|pong asks ping \(answer\) -> ping asks pong \(back\))/);
    expect(failed.trace.some((s) => s.kind === "timer")).toBe(false);
  });

  it("a wait cycle across two nodes is a deadlock too", async () => {
    const failed = await failure({ root: tree(new Asker("ping", "pong")), nodes: { other: tree(new Asker("pong", "ping")) }, seed: 2 }, (sim) => {
      void sim.send("ping", "go");
    });
    expect(failed.code).toBe("SIMULATION_DEADLOCK");
    expect(failed.message).toMatch(/ping asks pong/);
    expect(failed.message).toMatch(/pong asks ping/);
  });

  it("a pause of a node other than main settled twice fails the built-in pause-settled-once invariant", async () => {
    const sim = simulate({ root: shopNode(true), nodes: { vault: tree(new Holder("holder")) }, seed: 3 });
    current = sim;
    await sim.start();
    void sim.node("vault").send("holder", "pay");
    await sim.run(); // the pause is taken, and (below) decided once, legitimately: the run passes
    const vault = sim.node("vault");
    const suspensionId = vault.view.agent<Holder>("holder").suspension?.suspensionId as string;
    const resumed = vault.resume("holder", "alice", { suspensionId });
    await sim.run();
    await resumed;
    // Planted: the node's audit log acknowledges a second decision for the same pause, as a runtime that decided twice would write.
    const receipt = vault.view.audit.find((e) => e.event === "agent.resume" && e.details.suspensionId === suspensionId);
    expect(receipt).toBeDefined();
    (vault.view.audit as unknown as unknown[]).push({ ...receipt, event: "agent.deny", details: { ...receipt?.details, decider: "mallory" } });
    void vault.send("holder", "pay");
    const twice = await sim.run().then(
      () => undefined,
      (error: unknown) => error as SimulationFailure,
    );
    expect(twice?.code).toBe("SIMULATION_INVARIANT");
    expect(twice?.message).toMatch(new RegExp(`invariant pause-settled-once failed: the pause ${suspensionId} of 'holder' was settled twice: agent.resume, then agent.deny`));
  });
});
