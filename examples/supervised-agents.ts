/**
 * `npx tsx examples/supervised-agents.ts`: a small supervision tree on the
 * durable SQLite store.
 *
 *   root (Supervisor, ONE_FOR_ONE, exponential backoff from 50 ms)
 *   ├── counter   checkpoints a count after every increment
 *   ├── flaky     crashes on a "poison" message and is restarted
 *   └── workers   (DynamicSupervisor) where a manager spawns a worker
 *
 * It prints each step, then starts a second runtime on the same SQLite file
 * to show the state coming back. Run it with `npx tsx examples/supervised-agents.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AgentProcess,
  DynamicSupervisor,
  MemoryAuditSink,
  Runtime,
  ProcessStatus,
  Supervisor,
  silentLogger,
  type ChildTerminationReason,
  type Message,
} from "civitas-ts";
import { SqliteStateStore } from "civitas-ts/sqlite";

/** Counts increments and checkpoints after each one. */
class Counter extends AgentProcess<{ count: number }> {
  override state = { count: 0 };

  override async onStart(): Promise<void> {
    say(`  counter started with count=${this.state.count}`);
  }

  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "increment") {
      this.state.count += 1;
      await this.checkpoint(); // one atomic write to SQLite
    }
    return this.reply({ count: this.state.count });
  }
}

/** Processes jobs, checkpointing how many it did; a "poison" job makes it throw. */
class Flaky extends AgentProcess<{ processed: number }> {
  override state = { processed: 0 };

  override async onStart(): Promise<void> {
    const restored = this.incarnation > 1 ? " (state restored from SQLite after restart)" : "";
    say(`  flaky started (incarnation ${this.incarnation}) with processed=${this.state.processed}${restored}`);
  }

  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.job === "poison") throw new Error("cannot digest a poison job");
    this.state.processed += 1;
    await this.checkpoint();
    return this.reply({ processed: this.state.processed });
  }

  // Not overriding onError: its default, ErrorAction.ESCALATE, crashes the
  // agent and lets the supervisor decide.

  override async onStop(): Promise<void> {
    say(`  flaky onStop (status ${this.status})`);
  }
}

/** A short-lived worker: doubles a number. */
class Worker extends AgentProcess {
  override async onStart(): Promise<void> {
    say(`  ${this.name} started`);
  }

  override async handle(message: Message): Promise<Message | void> {
    const n = typeof message.payload.n === "number" ? message.payload.n : 0;
    return this.reply({ doubled: n * 2 });
  }
}

let childGone: (reason: string) => void = () => undefined;

/** Lives under the DynamicSupervisor, so it may spawn and despawn workers there. */
class Manager extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const worker = await this.spawn(Worker, "worker-1");
    const answer = await this.ask(worker.name, { n: message.payload.n ?? 0 }, { timeoutMs: 1000 });
    await this.despawn(worker.name);
    return this.reply(answer.payload);
  }

  override async onChildTerminated(name: string, reason: ChildTerminationReason): Promise<void> {
    say(`  manager was told that ${name} is gone: ${reason}`);
    childGone(reason);
  }
}

function say(line: string): void {
  console.log(line);
}

function buildRuntime(store: SqliteStateStore, audit: MemoryAuditSink): { runtime: Runtime; workers: DynamicSupervisor } {
  const workers = new DynamicSupervisor("workers", { maxChildren: 4 });
  const root = new Supervisor("root", {
    strategy: "ONE_FOR_ONE",
    maxRestarts: 3,
    restartWindowMs: 10_000,
    backoff: "EXPONENTIAL",
    backoffBaseMs: 50,
    children: [new Counter("counter"), new Flaky("flaky"), workers],
  });
  // silentLogger: the crash below is expected, so keep stderr quiet.
  const runtime = new Runtime({ root, store, auditSink: audit, logger: silentLogger });
  return { runtime, workers };
}

/** Resolves when `agent` next reaches `status`. */
function nextStatus(runtime: Runtime, agent: string, status: ProcessStatus): Promise<void> {
  return new Promise((resolve) => {
    const listener = (name: string, _from: ProcessStatus, to: ProcessStatus): void => {
      if (name !== agent || to !== status) return;
      runtime.off("agent.status", listener);
      resolve();
    };
    runtime.on("agent.status", listener);
  });
}

const dir = mkdtempSync(join(tmpdir(), "civitas-demo-"));
const dbFile = join(dir, "state.db");
const audit = new MemoryAuditSink();

try {
  say(`civitas-ts demo: state goes to SQLite at ${dbFile}`);
  say("starting the runtime: root (ONE_FOR_ONE) supervises counter, flaky and workers (DynamicSupervisor)");
  let store = new SqliteStateStore(dbFile);
  const first = buildRuntime(store, audit);
  await first.runtime.start();

  say("sending 3 increments to counter");
  for (let i = 0; i < 3; i++) await first.runtime.send("counter", {}, { type: "increment" });
  const count = await first.runtime.ask("counter", {}, { type: "get" });
  say(`  counter replied count=${String(count.payload.count)} (checkpointed to SQLite)`);

  say("asking flaky to process 2 jobs");
  for (const job of ["a", "b"]) {
    const reply = await first.runtime.ask("flaky", { job });
    say(`  flaky processed job ${job}: processed=${String(reply.payload.processed)}`);
  }

  for (const round of [1, 2]) {
    say(`sending a poison job to flaky (crash ${round})`);
    const crashed = nextStatus(first.runtime, "flaky", ProcessStatus.CRASHED);
    const running = nextStatus(first.runtime, "flaky", ProcessStatus.RUNNING);
    await first.runtime.send("flaky", { job: "poison" });
    await crashed;
    const crashedAt = Date.now();
    say("  flaky crashed: cannot digest a poison job");
    await running; // the runtime keeps Node alive from start() until stop() (keepAlive)
    say(`  root restarted flaky after ${Date.now() - crashedAt} ms of backoff (EXPONENTIAL from 50 ms: 50, then 100)`);
  }

  const after = await first.runtime.ask("flaky", { job: "c" });
  say(`  flaky processed job c after its restarts: processed=${String(after.payload.processed)}`);

  say("spawning a manager under workers; it spawns worker-1, asks it, and despawns it");
  await first.workers.spawn(Manager, "manager");
  const gone = new Promise<string>((resolve) => (childGone = resolve));
  const doubled = await first.runtime.ask("manager", { n: 21 });
  await gone;
  say(`  manager replied doubled=${String(doubled.payload.doubled)}; workers now holds: ${first.workers.children.map((c) => c.name).join(", ")}`);

  say("stopping the runtime");
  await first.runtime.stop();
  await store.close(); // the runtime never closes a store it was given
  const restarts = audit.ofType("agent.restart").length;
  const crashes = audit.ofType("agent.crash").length;
  say(`  stopped; audit trail: ${audit.events.length} events (${crashes} crashes, ${restarts} restarts)`);

  say("starting a second runtime on the same SQLite file");
  store = new SqliteStateStore(dbFile);
  const second = buildRuntime(store, new MemoryAuditSink());
  await second.runtime.start();
  const again = await second.runtime.ask("counter", {}, { type: "get" });
  say(`  counter state restored from SQLite after restart: count=${String(again.payload.count)}`);
  say("stopping the second runtime");
  await second.runtime.stop();
  await store.close();
  say("done");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
