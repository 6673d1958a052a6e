import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, InMemoryStateStore, MemoryAuditSink, ProcessStatus, Runtime, silentLogger, type JsonObject, type Message } from "../../src/index.js";
import * as testing from "../../src/entries/testing.js";
import { runTsChild } from "../support/child-process.js";
import {
  LIFECYCLE_ID_KEY,
  LifecycleDriver,
  recordTransitions,
  runLifecycleCommands,
  SuspensionModel,
  TestClock,
  transitionProblems,
  type LifecycleCommand,
} from "../../src/entries/testing.js";
import { whenStarted } from "../support/runtimes.js";

/** Records the payloads it handles; replies to asks itself with `{ echo }`. */
class Recorder extends AgentProcess {
  static seen: JsonObject[] = [];
  override async handle(message: Message): Promise<Message | void> {
    Recorder.seen.push(message.payload);
    if (message.replyTo !== undefined) return this.reply({ echo: message.payload[LIFECYCLE_ID_KEY] ?? null });
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.SKIP; // the driver's crashes must escalate anyway
  }
}

describe("runLifecycleCommands", () => {
  it("drives the agent the user gives it, with the payloads and type asked for, and records the facts", async () => {
    Recorder.seen = [];
    const audit = new MemoryAuditSink();
    const commands: LifecycleCommand[] = [
      { kind: "send", id: 0 },
      { kind: "suspend", reason: "review" },
      { kind: "ask", id: 1 },
      { kind: "crash", id: 2 },
      { kind: "resume", approver: "valid" },
    ];
    const observed = await runLifecycleCommands(commands, {
      createAgent: (name) => new Recorder(name),
      payload: (id) => ({ amount: id * 10 }),
      messageType: "payment",
      auditSink: audit,
    });
    expect(observed.outcome).toEqual(SuspensionModel.run(commands));
    expect(Recorder.seen).toEqual([
      { amount: 0, [LIFECYCLE_ID_KEY]: 0 },
      { amount: 10, [LIFECYCLE_ID_KEY]: 1 },
    ]);
    // onError answered SKIP, but the injected crash escalated: the agent was restarted
    expect(observed.outcome.crashed).toEqual([2]);
    expect(observed.transitions.filter((t) => t.to === ProcessStatus.CRASHED)).toHaveLength(1);
    expect(observed.entries.map((e) => [e.id, e.status, e.step])).toEqual([
      [0, ProcessStatus.RUNNING, 0],
      [1, ProcessStatus.RUNNING, 4],
      [2, ProcessStatus.RUNNING, 4],
    ]);
    expect(observed.suspensionIds).toHaveLength(1);
    // the user's sink saw what the driver saw
    expect(audit.events.map((e) => e.event)).toEqual(observed.audit.map((e) => e.event));
    expect(observed.audit.find((e) => e.event === "agent.resume")).toMatchObject({ step: 4, details: { approver: "approver-4", suspensionId: observed.suspensionIds[0] } });
  });

  it("records how asks end: replied, refused at shutdown, pending at the end", async () => {
    const first = await runLifecycleCommands([{ kind: "ask", id: 0 }, { kind: "suspend", reason: "" }, { kind: "ask", id: 1 }, { kind: "shutdown" }]);
    expect(first.outcome.asks).toEqual({ 0: "replied", 1: "RUNTIME_STOPPED" });
    const second = await runLifecycleCommands([{ kind: "suspend", reason: "" }, { kind: "ask", id: 0 }]);
    expect(second.outcome.asks).toEqual({ 0: "pending" });
    expect(second.outcome.stored).toBe(1);
  });

  it("re-sends what the subject had not taken after a process restart, and the asks are answered by the new runtime", async () => {
    const commands: LifecycleCommand[] = [{ kind: "suspend", reason: "r" }, { kind: "ask", id: 0 }, { kind: "send", id: 1 }, { kind: "restart" }, { kind: "resume", approver: "valid", bySuspensionId: true }];
    const observed = await runLifecycleCommands(commands);
    expect(observed.outcome).toEqual(SuspensionModel.run(commands));
    expect(observed.outcome.asks).toEqual({ 0: "replied" });
    expect(observed.entries.map((e) => e.instance)).toEqual([1, 1]);
    expect(new Set(observed.transitions.map((t) => t.instance))).toEqual(new Set([0, 1]));
  });

  it("keeps state in the store it is given, across process restarts", async () => {
    const store = new InMemoryStateStore();
    await runLifecycleCommands([{ kind: "suspend", reason: "kept" }, { kind: "shutdown" }], { store, agentName: "payer", siblingName: "auditor" });
    expect((await store.get("payer"))?.["_civitas.suspended"]).toMatchObject({ reason: "kept", approver: null });
  });

  it("can be driven step by step", async () => {
    const driver = await whenStarted(new LifecycleDriver({ clock: new TestClock() }));
    expect(driver.agent.status).toBe(ProcessStatus.RUNNING);
    expect(driver.runtime).toBeInstanceOf(Runtime);
    expect(await driver.apply({ kind: "suspend", reason: "x" })).toMatchObject({ result: "suspended", status: ProcessStatus.SUSPENDED, suspension: 1 });
    expect(driver.runtime.listSuspended().map((s) => s.name)).toEqual(["subject"]);
    const observation = await driver.finish();
    expect(observation.outcome.steps).toHaveLength(1);
    expect(driver.runtime.getAgent("subject")?.status).toBe(ProcessStatus.STOPPED);
    await driver.dispose(); // idempotent
  });

  it("fails with WAIT_TIMEOUT, naming the command, when the subject never settles", async () => {
    class Stuck extends AgentProcess {
      override async handle(): Promise<void> {
        await new Promise(() => undefined);
      }
    }
    const run = runLifecycleCommands([{ kind: "send", id: 0 }], { createAgent: (name) => new Stuck(name), settleTimeoutMs: 50 });
    await expect(run).rejects.toMatchObject({ code: "WAIT_TIMEOUT", message: expect.stringContaining("after send#0") as unknown });
  });

  it("refuses an agent factory that does not build the named agent, and equal names", async () => {
    await expect(runLifecycleCommands([], { createAgent: () => new AgentProcess("other") })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(() => new LifecycleDriver({ agentName: "same", siblingName: "same" })).toThrow(/different names/);
  });
});

describe("recordTransitions / transitionProblems", () => {
  it("records one agent's status changes until stopped", async () => {
    const runtime = new Runtime({ root: [new AgentProcess("a"), new AgentProcess("b")], logger: silentLogger });
    const recorder = recordTransitions(runtime, { agent: "a" });
    const all = recordTransitions(runtime);
    await runtime.start();
    await runtime.suspend("a", "r");
    recorder.stop();
    recorder.stop();
    await runtime.resume("a", "ann");
    await runtime.stop();
    expect(recorder.transitions.map((t) => `${t.from}->${t.to}`)).toEqual(["INITIALIZING->RUNNING", "RUNNING->SUSPENDED"]);
    expect(all.transitions.filter((t) => t.agent === "b").map((t) => t.to)).toEqual(["RUNNING", "STOPPING", "STOPPED"]);
    expect(transitionProblems(all.transitions)).toEqual([]);
  });

  it("reports illegal and discontinuous changes, and lets a new instance start afresh", () => {
    const { RUNNING, SUSPENDED, STOPPING, STOPPED, INITIALIZING, CRASHED } = ProcessStatus;
    expect(
      transitionProblems([
        { agent: "a", from: INITIALIZING, to: RUNNING },
        { agent: "a", from: SUSPENDED, to: RUNNING },
        { agent: "a", from: RUNNING, to: INITIALIZING },
        { agent: "b", from: SUSPENDED, to: CRASHED },
      ]),
    ).toEqual([
      "#1: 'a' SUSPENDED -> RUNNING does not follow the previous change, which ended in RUNNING",
      "#2: 'a' RUNNING -> INITIALIZING is not a legal transition",
      "#3: 'b' SUSPENDED -> CRASHED is not a legal transition",
    ]);
    expect(
      transitionProblems([
        { instance: 0, from: RUNNING, to: STOPPING },
        { instance: 0, from: STOPPING, to: STOPPED },
        { instance: 1, from: INITIALIZING, to: SUSPENDED },
      ]),
    ).toEqual([]);
  });
});

describe("civitas-ts/testing entry", () => {
  it("exports the helpers", () => {
    for (const name of ["TestClock", "waitForStatus", "WaitTimeoutError", "messageArbitrary", "payloadArbitrary", "lifecycleCommandsArbitrary", "SuspensionModel", "runLifecycleCommands", "LifecycleDriver", "recordTransitions", "transitionProblems"]) {
      expect(testing, name).toHaveProperty(name);
    }
  });

  it.each([
    ["the source", "src/entries/testing.ts"],
    ["the built package", "dist/entries/testing.js"],
  ])("imported without fast-check installed (%s), it fails at once saying how to install it", { timeout: 30_000 }, async (_what, entry) => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
    const run = await runTsChild(resolve(root, "test/testing/fixtures/without-fast-check.ts"), [resolve(root, entry)], { timeoutMs: 25_000 });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.lines[0] ?? "{}") as { imported?: boolean; name?: string; code?: string; message?: string; causeCode?: string };
    expect(result.imported).toBeUndefined();
    expect(result.name).toBe("Error");
    expect(result.code).toBe("ERR_MODULE_NOT_FOUND");
    expect(result.causeCode).toBe("ERR_MODULE_NOT_FOUND");
    expect(result.message).toMatch(/^civitas-ts\/testing needs the optional peer dependency fast-check \(\^4\), which could not be found \(Cannot find package 'fast-check'/);
    expect(result.message).toContain("install it with: npm install --save-dev fast-check");
  });

  it("the core (civitas-ts) never imports fast-check: only this entry does", () => {
    const src = resolve(dirname(fileURLToPath(import.meta.url)), "../../src");
    const seen = new Set<string>();
    const offenders: string[] = [];
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      if (/from\s+["']fast-check["']|import\(\s*["']fast-check["']\s*\)/.test(text)) offenders.push(file);
      for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)\.js["']/g)) visit(resolve(dirname(file), `${spec}.ts`));
    };
    visit(resolve(src, "index.ts"));
    expect(seen.size).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
    seen.clear();
    visit(resolve(src, "entries/testing.ts"));
    expect(offenders.length).toBeGreaterThan(0);
  });
});
