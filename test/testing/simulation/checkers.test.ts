/**
 * Issue 27, item 5: a recorded history with a linearizability check, and liveness monitors. Each
 * checker finds a planted bug on 20 of 20 seeds and accepts the fixed system on the same seeds.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess } from "../../../src/process/agent-process.js";
import type { Message } from "../../../src/message/message.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { History } from "../../../src/testing/simulation/history.js";
import { checkLinearizable, mapModel, registerModel } from "../../../src/testing/simulation/linearizability.js";
import { eventually } from "../../../src/testing/simulation/liveness.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Simulation } from "../../../src/testing/simulation/types.js";

const built: Simulation[] = [];
afterEach(async () => {
  for (const sim of built.splice(0)) await sim.stop();
});

/** The register's copy that answers reads. */
class Replica extends AgentProcess<{ value: number }> {
  override state = { value: 0 };
  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "apply") {
      this.state.value = message.payload.value as number;
      return this.reply({});
    }
    return this.reply({ value: this.state.value });
  }
}

/** Carries writes from the primary to the replica (a network hop); answers only an `apply` that was asked. */
class Link extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    await this.ask("replica", message.payload, { type: "apply" });
    if (message.type === "apply") return this.reply({});
  }
}

/**
 * Takes writes and passes them to the replica over the link. The planted bug (`acknowledgeFirst`): it
 * answers the write before the replica has it, so a read that begins after the write ended can still
 * see the old value.
 */
class Primary extends AgentProcess {
  constructor(
    name: string,
    private readonly acknowledgeFirst: boolean,
  ) {
    super(name);
  }
  override async handle(message: Message): Promise<Message | void> {
    if (this.acknowledgeFirst) await this.send("link", { value: message.payload.value as number }, { type: "forward" });
    else await this.ask("link", { value: message.payload.value as number }, { type: "apply" });
    return this.reply({});
  }
}

async function registerHistory(seed: number, buggy: boolean): Promise<History> {
  const sim = simulate({ root: () => new Supervisor("root", { children: [new Primary("primary", buggy), new Link("link"), new Replica("replica")] }), seed });
  built.push(sim);
  await sim.start();
  const history = new History();
  const write = (client: string, value: number): Promise<unknown> => history.record(client, "write", value, async () => void (await sim.ask("primary", "write", { value })));
  const read = (client: string): Promise<unknown> => history.record(client, "read", null, async () => (await sim.ask("replica", "read", {})).payload.value);
  // Two clients, each one operation at a time: a writer, and a reader that reads after each write ended, plus one concurrent read.
  const clients = [
    (async () => {
      for (let value = 1; value <= 8; value++) {
        await write("writer", value);
        await read("follower");
      }
    })(),
    read("bystander"),
  ];
  let finished = false;
  const done = Promise.all(clients).then(() => (finished = true));
  // The clients go on between steps (each next call begins when the previous one was answered): run until they are done.
  while (!finished) {
    const before = sim.trace.length;
    await sim.run();
    if (!finished && sim.trace.length === before) await Promise.race([done, new Promise((resolve) => setImmediate(resolve))]);
    if (!finished && sim.trace.length === before) throw new Error(`seed ${seed}: the clients wait for an answer that never comes\n${sim.formatTrace()}`);
  }
  await done;
  await sim.run();
  await sim.stop();
  return history;
}

describe("checkLinearizable", () => {
  it("finds the planted stale read (a write acknowledged before its replica has it) on 20 of 20 seeds", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const result = checkLinearizable(await registerHistory(seed, true), registerModel(0));
      expect(result.linearizable, `seed ${seed}`).toBe(false);
      if (result.linearizable === false) expect(result.reason).toMatch(/no order of the \d+ operations explains their outputs/);
    }
  });

  it("accepts the fixed register (the write waits for its replica) on the same 20 seeds, with an order that explains every output", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const history = await registerHistory(seed, false);
      const result = checkLinearizable(history, registerModel(0));
      expect(result.linearizable, `seed ${seed}`).toBe(true);
      if (result.linearizable === true) expect(result.order).toHaveLength(history.operations.length);
    }
  });

  it("by hand: overlapping operations may take effect in either order; an operation that failed took none; one without an answer may or may not have", () => {
    const history = new History();
    const w1 = history.invoke("a", "write", 1);
    const r = history.invoke("b", "read", null);
    w1.ok(undefined);
    r.ok(1); // overlapped the write: may see it
    expect(checkLinearizable(history, registerModel(0)).linearizable).toBe(true);

    const failed = new History();
    failed.invoke("a", "write", 5).fail();
    failed.invoke("b", "read", null).ok(5);
    expect(checkLinearizable(failed, registerModel(0)).linearizable).toBe(false);

    const unknown = new History();
    unknown.invoke("a", "write", 5); // never answered (a timeout): it may have taken effect
    unknown.invoke("b", "read", null).ok(5);
    unknown.invoke("c", "read", null).ok(5);
    expect(checkLinearizable(unknown, registerModel(0)).linearizable).toBe(true);

    const flicker = new History();
    flicker.invoke("a", "write", 5);
    flicker.invoke("b", "read", null).ok(5);
    flicker.invoke("c", "read", null).ok(0); // after b saw 5: the unknown write cannot be undone
    expect(checkLinearizable(flicker, registerModel(0)).linearizable).toBe(false);

    const cas = new History();
    cas.invoke("a", "cas", [0, 1]).ok(true);
    cas.invoke("b", "cas", [0, 2]).ok(true); // after a's swap: 0 is gone
    expect(checkLinearizable(cas, registerModel(0)).linearizable).toBe(false);

    const map = new History();
    map.invoke("a", "put", ["x", 1]).ok(undefined);
    map.invoke("b", "get", "x").ok(1);
    map.invoke("b", "get", "y").ok(null);
    expect(checkLinearizable(map, mapModel()).linearizable).toBe(true);
  });

  it("answers unknown past its bounds instead of searching forever", () => {
    const history = new History();
    for (let i = 0; i < 65; i++) history.invoke(`p${i}`, "write", i);
    expect(checkLinearizable(history, registerModel(0)).linearizable).toBe("unknown");
    const wide = new History();
    const pending = Array.from({ length: 12 }, (_, i) => wide.invoke(`w${i}`, "write", i));
    wide.invoke("r", "read", null).ok(99);
    void pending;
    expect(checkLinearizable(wide, registerModel(0), { maxStates: 50 }).linearizable).toBe("unknown");
  });
});

/** Pays once asked, through a clearing agent. The planted bug (`dropsRetries`): a payment whose first clearing attempt is refused is never retried. */
class Payer extends AgentProcess<{ paid: number; attempts: number }> {
  override state = { paid: 0, attempts: 0 };
  constructor(
    name: string,
    private readonly dropsRetries: boolean,
  ) {
    super(name);
  }
  override async handle(message: Message): Promise<void> {
    if (message.type === "pay" || message.type === "retry") {
      this.state.attempts += 1;
      const answer = await this.ask("clearing", {}, { type: "clear" });
      if (answer.payload.cleared === true) this.state.paid += 1;
      else if (!this.dropsRetries) await this.send(this.name, {}, { type: "retry" });
      await this.checkpoint();
    }
  }
}

/** Refuses every other request (a busy clearing house), or every request when `closed`. */
class Clearing extends AgentProcess<{ seen: number }> {
  override state = { seen: 0 };
  constructor(
    name: string,
    private readonly closed = false,
  ) {
    super(name);
  }
  override async handle(): Promise<Message> {
    this.state.seen += 1;
    return this.reply({ cleared: !this.closed && this.state.seen % 2 === 0 });
  }
}

async function payment(seed: number, dropsRetries: boolean): Promise<{ sim: Simulation; settles: ReturnType<typeof eventually> }> {
  const settles = eventually("the payment settles", (view) => (view.stored("payer")?.paid as number | undefined) === 1);
  const sim = simulate({ root: () => new Supervisor("root", { children: [new Payer("payer", dropsRetries), new Clearing("clearing")] }), seed, invariants: [settles.watch] });
  built.push(sim);
  await sim.start();
  void sim.send("payer", "pay", {}).catch(() => undefined);
  await sim.run();
  await sim.stop();
  return { sim, settles };
}

describe("eventually (liveness monitors)", () => {
  it("finds the planted payment that never settles on 20 of 20 seeds, reported with its trace", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const { sim, settles } = await payment(seed, true);
      let failure: unknown;
      try {
        settles.check(sim);
      } catch (error) {
        failure = error;
      }
      expect(failure, `seed ${seed}`).toBeInstanceOf(SimulationFailure);
      expect((failure as SimulationFailure).code).toBe("SIMULATION_LIVENESS");
      expect((failure as SimulationFailure).message).toMatch(/liveness: "the payment settles" never held; the run became quiescent after \d+ steps/);
      expect((failure as SimulationFailure).trace.length).toBeGreaterThan(0);
    }
  });

  it("holds for the fixed payer (it retries) on the same seeds, and says after which step", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const { sim, settles } = await payment(seed, false);
      expect(() => settles.check(sim), `seed ${seed}`).not.toThrow();
      expect(settles.heldAt).toBeGreaterThan(0);
    }
  });

  it("reports a livelock (a payer retrying a closed clearing house forever) as a liveness failure when the run hits its step limit", async () => {
    const settles = eventually("the payment settles", (view) => (view.stored("payer")?.paid as number | undefined) === 1);
    const sim = simulate({ root: () => new Supervisor("root", { children: [new Payer("payer", false), new Clearing("clearing", true)] }), seed: 7, maxSteps: 300, invariants: [settles.watch] });
    built.push(sim);
    await sim.start();
    void sim.send("payer", "pay", {}).catch(() => undefined);
    const ended = await sim.run().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((ended as SimulationFailure).code).toBe("SIMULATION_STEP_LIMIT");
    expect(() => settles.check(sim, ended)).toThrow(/liveness: "the payment settles" never held; the run hit its step limit after \d+ steps/);
  });
});
