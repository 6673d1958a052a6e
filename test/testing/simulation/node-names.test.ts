/**
 * Names across the nodes of a simulation, as on a NATS bus: agent names are
 * unique across nodes (the bus routes by name), `sendCapable` and
 * `broadcast` reach the agents other nodes announced, and a control type
 * arriving on an agent's subject is dropped, as `NatsTransport` drops it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fromWire } from "../../../src/message/from-wire.js";
import type { Message } from "../../../src/message/message.js";
import { toWire } from "../../../src/message/to-wire.js";
import { AgentProcess } from "../../../src/process/agent-process.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import type { Gate } from "../../../src/testing/simulation/gate.js";
import { SimulatedClock } from "../../../src/testing/simulation/simulated-clock.js";
import { SimulatedNetwork } from "../../../src/testing/simulation/simulated-network.js";
import { SimulatedTransport } from "../../../src/testing/simulation/simulated-transport.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { Simulation } from "../../../src/testing/simulation/types.js";
import { bankNode, shopNode } from "./fixtures/two-nodes.js";

let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

/** Keeps what it is sent; on `fan-out`, broadcasts `ping` to `worker-*` and sends `job` to the agents that can `work`, twice. */
class Keeper extends AgentProcess<{ got: string[] }> {
  override async onStart(): Promise<void> {
    this.state.got ??= [];
  }

  override async handle(message: Message): Promise<void> {
    if (message.type !== "fan-out") {
      this.state.got.push(`${message.type} from ${message.sender}`);
      return;
    }
    this.state.got.push(`broadcast reached ${await this.broadcast("worker-*", {}, { type: "ping" })}`);
    await this.sendCapable("work", {}, { type: "job" });
    await this.sendCapable("work", {}, { type: "job" });
  }
}

const workers = (): Supervisor => new Supervisor("workers-root", { children: [new Keeper("worker-1", { capabilities: ["work"] }), new Keeper("worker-2", { capabilities: ["work"] })] });

describe("names across nodes", () => {
  it("an agent name used on two nodes is refused at simulate() with DUPLICATE_NAME, naming both nodes", () => {
    const refused = (() => {
      try {
        simulate({ root: shopNode(true), nodes: { bank: bankNode, copy: () => new Supervisor("copy-root", { children: [new Keeper("shop")] }) } });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refused).toMatchObject({ name: "DuplicateNameError", code: "DUPLICATE_NAME", agent: "shop" });
    expect((refused as Error).message).toMatch(/agent name 'shop' is used on node main and on node copy; .*unique across nodes/);
    // Supervisors are not on the bus: the same supervisor name on two nodes is fine, and so are distinct agents.
    expect(() => simulate({ root: () => new Supervisor("root", { children: [new Keeper("a")] }), nodes: { b: () => new Supervisor("root", { children: [new Keeper("b")] }) } })).not.toThrow();
  });

  it("sendCapable and broadcast reach the agents another node announced, round-robin per capability, as over NATS", async () => {
    const sim = simulate({ root: () => new Supervisor("root", { children: [new Keeper("boss")] }), nodes: { farm: workers }, seed: 4 });
    current = sim;
    await sim.start();
    void sim.send("boss", "fan-out");
    await sim.run();
    expect(sim.view.agent<Keeper>("boss").state.got).toEqual(["broadcast reached 2"]);
    const got = (name: string): string[] => sim.view.node("farm").agent<Keeper>(name).state.got;
    expect([...got("worker-1"), ...got("worker-2")].sort()).toEqual(["job from boss", "job from boss", "ping from boss", "ping from boss"]);
    expect(got("worker-1")).toContain("job from boss");
    expect(got("worker-2")).toContain("job from boss");
  });

  it("a control type arriving on an agent's subject is dropped and logged, never delivered (NatsTransport's filter)", async () => {
    const clock = new SimulatedClock(0);
    const gates: Gate[] = [];
    const network = new SimulatedNetwork({ add: (gate) => void gates.push(gate), touch: () => undefined }, () => 0, clock, clock.outside(), 1_500, 2_000, () => true);
    const delivered: Message[] = [];
    const warned: string[] = [];
    const transport = new SimulatedTransport(network, 0, clock, "bank");
    await transport.start({
      deliver: (message) => {
        delivered.push(message);
        return Promise.resolve();
      },
      settleReply: () => undefined,
      control: () => Promise.resolve({}),
      agents: () => [{ name: "vault", capabilities: [] }],
      logger: { debug: () => undefined, info: () => undefined, warn: (text: string) => void warned.push(text), error: () => undefined },
    });
    const envelope = (type: string): Message => fromWire(toWire({ id: `m-${type}`, type, sender: "mallory", recipient: "vault", payload: {}, timestamp: 0, traceId: "t".repeat(32), spanId: "s".repeat(16), attempt: 0, priority: 0 }));
    network.publish("main", "civitas.agent.vault", envelope("_agency.resume"));
    network.publish("main", "civitas.agent.vault", envelope("deposit"));
    for (const gate of gates.splice(0)) gate.open(undefined);
    expect(delivered.map((m) => m.type)).toEqual(["deposit"]);
    expect(transport.dropped).toBe(1);
    expect(warned[0]).toMatch(/'_agency.resume' control message from 'mallory'.*dropped/);
  });
});
