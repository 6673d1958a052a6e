/**
 * The simulation mode (`simulate()` of civitas-ts/testing), measured two ways.
 *
 * 1. Cost of a step: one long simulation of ping-pong between two agents
 *    (each message is one chosen delivery step), µs per step. Baseline: the
 *    same ping-pong on the plain runtime, µs per message.
 * 2. Many short runs, as a property test makes them: a bank of a ledger and
 *    two coordinators making two concurrent transfers (ask, ask, send, send
 *    each; about 30 steps with their store writes and audit appends), from
 *    `simulate()` to `stop()`, seconds per 1,000 runs and µs per step
 *    (building and starting the runtime included). Baseline: the same
 *    scenario on a plain runtime (InMemoryStateStore, MemoryAuditSink),
 *    seconds per 1,000 runs.
 *
 * 3. `exhaust` over the same bank: runs per second of the search with
 *    schedule reduction (sleep sets) and with a preemption bound, each
 *    beside the full depth-first search (its first FULL_SCHEDULES
 *    schedules) in the same process; the notes give the schedules each
 *    complete search ran and its time.
 *
 * Target: a step costs at most 5 µs (issue 13).
 */
import type { Message, Supervisor as SupervisorType } from "../src/index.js";
import { loadTesting, type CivitasModule, type TestingModule } from "./civitas.js";
import { median, settle, timed, type Benchmark, type Row } from "./harness.js";

const BENCH = "simulation";
const PINGPONG_MESSAGES = 20_000;
const PINGPONG_ROUNDS = 5;
const BANK_RUNS = 1_000;
const BANK_ROUNDS = 3;
const FULL_SCHEDULES = 2_000;

interface Bank {
  readonly root: SupervisorType;
  readonly finished: () => boolean;
}

/** The agent classes of both scenarios, built on the loaded `AgentProcess`. */
function scenarios(civitas: CivitasModule): { pingpong: (messages: number) => SupervisorType; bank: () => Bank } {
  const { AgentProcess, Supervisor } = civitas;
  class Player extends AgentProcess {
    constructor(
      name: string,
      private readonly peer: string,
      private readonly limit: number,
      private readonly done: () => void,
    ) {
      super(name);
    }
    override async handle(message: Message): Promise<void> {
      const n = message.payload.n as number;
      if (n >= this.limit) this.done();
      else await this.send(this.peer, { n: n + 1 });
    }
  }
  class Ledger extends AgentProcess<{ accounts: Record<string, number> }> {
    override async onStart(): Promise<void> {
      this.state.accounts ??= { x: 50, y: 50 };
    }
    override async handle(message: Message): Promise<Message | void> {
      const account = message.payload.account as string;
      if (message.type === "balance") return this.reply({ value: this.state.accounts[account] ?? 0 });
      this.state.accounts[account] = message.payload.value as number;
      await this.checkpoint();
    }
  }
  class Coordinator extends AgentProcess {
    finished = 0;
    override async handle(message: Message): Promise<void> {
      const { from, to, amount } = message.payload as { from: string; to: string; amount: number };
      const a = await this.ask("ledger", { account: from }, { type: "balance" });
      const b = await this.ask("ledger", { account: to }, { type: "balance" });
      await this.send("ledger", { account: from, value: (a.payload.value as number) - amount }, { type: "set" });
      await this.send("ledger", { account: to, value: (b.payload.value as number) + amount }, { type: "set" });
      this.finished += 1;
    }
  }
  return {
    pingpong: (messages) => new Supervisor("root", { children: [new Player("ping", "pong", messages, () => undefined), new Player("pong", "ping", messages, () => undefined)] }),
    bank: () => {
      const ledger = new Ledger("ledger");
      const a = new Coordinator("coord-a");
      const b = new Coordinator("coord-b");
      return { root: new Supervisor("bank", { children: [ledger, a, b] }), finished: () => a.finished + b.finished === 2 && ledger.mailbox.size === 0 };
    },
  };
}

/** µs per step of one simulated ping-pong of `messages` messages (after the start). */
async function simulatedPingPong(testing: TestingModule, build: (messages: number) => SupervisorType): Promise<number> {
  const sim = testing.simulate({ root: () => build(PINGPONG_MESSAGES), seed: 1, maxSteps: PINGPONG_MESSAGES * 2 });
  await sim.start();
  const before = sim.trace.length;
  const seconds = await timed(async () => {
    void sim.send("ping", "message", { n: 1 });
    await sim.run();
  });
  const steps = sim.trace.length - before;
  await sim.stop();
  return (seconds * 1e6) / steps;
}

/** µs per message of the same ping-pong on the plain runtime. */
async function plainPingPong(civitas: CivitasModule): Promise<number> {
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const { AgentProcess, Supervisor, Runtime, InMemoryStateStore, silentLogger } = civitas;
  class Player extends AgentProcess {
    constructor(
      name: string,
      private readonly peer: string,
    ) {
      super(name);
    }
    override async handle(message: Message): Promise<void> {
      const n = message.payload.n as number;
      if (n >= PINGPONG_MESSAGES) done();
      else await this.send(this.peer, { n: n + 1 });
    }
  }
  const runtime = new Runtime({ root: new Supervisor("root", { children: [new Player("ping", "pong"), new Player("pong", "ping")] }), store: new InMemoryStateStore(), logger: silentLogger, keepAlive: false });
  await runtime.start();
  const seconds = await timed(async () => {
    await runtime.send("ping", { n: 1 });
    await finished;
  });
  await runtime.stop();
  return (seconds * 1e6) / PINGPONG_MESSAGES;
}

/** Seconds for `runs` simulations of the bank scenario, and the steps they took. */
async function simulatedBanks(testing: TestingModule, bank: () => Bank, runs: number): Promise<{ seconds: number; steps: number }> {
  let steps = 0;
  const seconds = await timed(async () => {
    for (let seed = 0; seed < runs; seed++) {
      const sim = testing.simulate({ root: () => bank().root, seed });
      await sim.start();
      void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
      void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
      await sim.run();
      await sim.stop();
      steps += sim.trace.length;
    }
  });
  return { seconds, steps };
}

/** Seconds for `runs` of the bank scenario on plain runtimes. */
async function plainBanks(civitas: CivitasModule, bank: () => Bank, runs: number): Promise<number> {
  const { Runtime, InMemoryStateStore, MemoryAuditSink, silentLogger } = civitas;
  return timed(async () => {
    for (let i = 0; i < runs; i++) {
      const { root, finished } = bank();
      const runtime = new Runtime({ root, store: new InMemoryStateStore(), auditSink: new MemoryAuditSink(), logger: silentLogger, keepAlive: false });
      await runtime.start();
      await runtime.send("coord-a", { from: "x", to: "y", amount: 10 }, { type: "transfer" });
      await runtime.send("coord-b", { from: "y", to: "x", amount: 5 }, { type: "transfer" });
      while (!finished()) await settle();
      await runtime.stop();
    }
  });
}

/** Runs per second of an `exhaust` of the bank's two transfers, how many runs it made, and whether it was complete. */
async function exhaustBank(testing: TestingModule, bank: () => Bank, options: { reduce?: boolean; maxPreemptions?: number; maxSchedules?: number }): Promise<{ perSecond: number; runs: number; seconds: number; complete: boolean }> {
  let result!: Awaited<ReturnType<TestingModule["exhaust"]>>;
  const seconds = await timed(async () => {
    result = await testing.exhaust({
      root: () => bank().root,
      maxSteps: 300,
      ...options,
      scenario: async (sim) => {
        void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
        void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
        await sim.run();
      },
    });
  });
  const runs = result.schedules + result.pruned;
  return { perSecond: runs / seconds, runs, seconds, complete: result.complete };
}

export const simulation: Benchmark = {
  name: BENCH,
  title: `Simulation: a step of ping-pong (${PINGPONG_MESSAGES.toLocaleString("en")} steps), ${BANK_RUNS.toLocaleString("en")} runs of a two-transfer bank`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const testing = await loadTesting();
    const { pingpong, bank } = scenarios(civitas);
    await simulatedPingPong(testing, pingpong); // warm-up
    await plainPingPong(civitas);
    const stepUs: number[] = [];
    const messageUs: number[] = [];
    for (let round = 0; round < PINGPONG_ROUNDS; round++) {
      stepUs.push(await simulatedPingPong(testing, pingpong));
      messageUs.push(await plainPingPong(civitas));
    }
    await simulatedBanks(testing, bank, 100); // warm-up
    await plainBanks(civitas, bank, 100);
    const simulated: { seconds: number; steps: number }[] = [];
    const plain: number[] = [];
    for (let round = 0; round < BANK_ROUNDS; round++) {
      simulated.push(await simulatedBanks(testing, bank, BANK_RUNS));
      plain.push(await plainBanks(civitas, bank, BANK_RUNS));
    }
    const full = await exhaustBank(testing, bank, { reduce: false, maxSchedules: FULL_SCHEDULES });
    const reduced = await exhaustBank(testing, bank, {});
    const bounded = await exhaustBank(testing, bank, { maxPreemptions: 1 });
    const searchNote = (name: string, r: { runs: number; seconds: number; complete: boolean }): string =>
      `${name}: ${r.runs.toLocaleString("en")} runs in ${r.seconds.toFixed(2)} s, ${r.complete ? "complete" : "not complete"}; baseline: the full search, ${full.runs.toLocaleString("en")} schedules (${full.complete ? "complete" : `cut at ${FULL_SCHEDULES.toLocaleString("en")}`})`;
    const bankSeconds = median(simulated.map((r) => r.seconds));
    const bankSteps = simulated[0]?.steps ?? Number.NaN;
    return [
      { bench: BENCH, metric: "one step (ping-pong)", unit: "us", runtime: median(stepUs), baseline: median(messageUs), target: { kind: "value<=", value: 5 }, note: "baseline: one message of the same ping-pong on the plain runtime" },
      {
        bench: BENCH,
        metric: `${BANK_RUNS.toLocaleString("en")} bank runs`,
        unit: "s",
        runtime: bankSeconds,
        baseline: median(plain),
        note: `${(bankSteps / BANK_RUNS).toFixed(0)} steps a run, ${((bankSeconds * 1e6) / bankSteps).toFixed(1)} us a step with the runtime's build, start and stop; baseline: the same scenario on plain runtimes`,
      },
      { bench: BENCH, metric: "exhaust, reduced (sleep sets)", unit: "runs/s", runtime: reduced.perSecond, baseline: full.perSecond, note: searchNote("reduced search of the bank", reduced) },
      { bench: BENCH, metric: "exhaust, maxPreemptions: 1", unit: "runs/s", runtime: bounded.perSecond, baseline: full.perSecond, note: searchNote("bounded search of the bank", bounded) },
    ];
  },
};
