/**
 * Review of durable suspension and state (SPEC §5, §8, §11; seed FINAL DESIGN
 * S1–S10): remaining paths where a pause is lifted, lost or left behind.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { ErrorAction, ProcessStatus, Supervisor, SUSPENSION_KEY, type Message } from "../../src/index.js";
import { verifySuspension } from "../../src/entries/audit.js";
import { runTsChild } from "../support/child-process.js";
import { gate, Pausable, rejectsWithCode, rig, teardown, track, turns, waitUntil } from "../suspension/helpers.js";

afterEach(teardown);

const S = ProcessStatus;

/**
 * Writes `source(from)` as a child script into a fresh temp dir (named after
 * `prefix`, removed when the test finishes) and returns the paths of both.
 * `from("index")` / `from("entries/sqlite")` is the quoted path of that
 * module of src, for the script's imports.
 */
function childScript(prefix: string, source: (from: (module: string) => string) => string): { script: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  const src = path.resolve("src");
  const script = path.join(dir, "child.mts");
  fs.writeFileSync(script, source((module) => JSON.stringify(path.join(src, `${module}.js`))));
  return { script, dir };
}

/**
 * The documented "store the action, suspend(), checkpoint()" handler; its
 * notification to the approver (after the checkpoint) may fail, which crashes it.
 * onResume pays the pending action.
 */
class CrashyPayments extends Pausable {
  readonly go = gate();
  readonly paid: string[] = [];
  failNotify = true;
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.entered++;
    this.state.pending = message.payload.invoice ?? null;
    this.suspend(`approve ${String(message.payload.invoice)}`);
    await this.checkpoint();
    await this.go.promise; // e.g. notifying the approval queue
    if (this.failNotify) throw new Error("approval queue unreachable");
  }
  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
  override async onResume(approver: string): Promise<void> {
    await super.onResume(approver);
    if (typeof this.state.pending !== "string") return;
    this.paid.push(`${this.state.pending} by ${approver}`);
    this.state.pending = null;
    await this.checkpoint();
  }
}

describe("a resume sent while RUNNING (SPEC 11.9: a no-op) and a crash-restart", () => {
  it("does not lift the pause the running handler asked for when the handler crashes and the agent restarts into that pause", async () => {
    const agent = new CrashyPayments("pay");
    const r = rig(new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }));
    await r.runtime.start();
    await r.runtime.send("pay", { op: "pay", invoice: "INV-1" });
    await waitUntil(() => agent.entered === 1, "handling");
    // What an approver can see: RUNNING, no pause listed. A resume now is a no-op by contract.
    expect(agent.status).toBe(S.RUNNING);
    expect(r.runtime.listSuspended()).toEqual([]);
    const resuming = track(r.runtime.resume("pay", "bob"));
    await turns(5);
    agent.go.open(); // the handler crashes; the pause it asked for was stored with the pending action
    await waitUntil(() => agent.incarnation === 2 && agent.status !== S.INITIALIZING, "restarted");
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    await turns(20);
    // Without the crash the same resume is dropped (test/review/diff-review.test.ts); the crash must not change that.
    expect(agent.paid).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(r.audit.ofType("agent.resume", "pay")).toEqual([]);
  });
});

/** onStart finds an action due, stores it, asks for approval and checkpoints: the documented order, in a hook. */
class DueAtStart extends Pausable {
  override async onStart(): Promise<void> {
    await super.onStart();
    if (this.state.pending !== undefined) return;
    this.state.pending = "INV-9";
    this.suspend("approve INV-9");
    await this.checkpoint();
  }
}

describe("this.suspend() then checkpoint() from onStart (S4: one atomic write)", () => {
  it("the checkpoint that stores the pending action also stores the pause asked for before it", async () => {
    const agent = new DueAtStart("due");
    const r = rig([agent]);
    await r.runtime.start();
    await waitUntil(() => agent.status === S.SUSPENDED, "suspended");
    const withAction = r.store.setsOf("due").filter((s) => s.state.pending === "INV-9");
    expect(withAction.length).toBeGreaterThan(0);
    // The first write of the pending action must carry its pause, as it does from handle():
    // a kill -9 right after it would otherwise restart RUNNING with an unapproved action.
    expect(withAction[0]!.state[SUSPENSION_KEY]).toBeDefined();
  });

  it("under SIGKILL right after that checkpoint, the restarted agent is SUSPENDED, not RUNNING with the pending action", async () => {
    const { script, dir } = childScript(
      "civitas-pending-onstart-",
      (from) => `
import { AgentProcess, Runtime, silentLogger } from ${from("index")};
import { SqliteStateStore } from ${from("entries/sqlite")};
const [mode, file] = process.argv.slice(2);
class Due extends AgentProcess {
  override async onStart() {
    if (mode !== "first") return;
    this.state.pending = "INV-9";
    this.suspend("approve INV-9");
    await this.checkpoint();
    process.stdout.write(JSON.stringify({ ev: "checkpointed" }) + "\\n");
    await new Promise(() => {}); // e.g. still talking to the approval queue: killed here
  }
}
const agent = new Due("due");
const store = new SqliteStateStore(file);
const runtime = new Runtime({ root: [agent], store, logger: silentLogger, keepAlive: false });
await runtime.start();
process.stdout.write(JSON.stringify({ ev: "start", status: agent.status, pending: agent.state.pending ?? null }) + "\\n");
await runtime.stop();
await store.close();
`,
    );
    const file = path.join(dir, "state.db");
    const first = await runTsChild(script, ["first", file], { timeoutMs: 15_000, onLine: (line, kill) => line.includes("checkpointed") && kill() });
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const second = await runTsChild(script, ["report", file], { timeoutMs: 15_000 });
    expect(second.code, second.stderr).toBe(0);
    const start = JSON.parse(second.lines.find((l) => l.includes('"start"'))!) as { status: string; pending: string | null };
    expect(start.pending).toBe("INV-9");
    expect(start.status).toBe("SUSPENDED");
  }, 40_000);
});

describe("approver validation (S6: a resume always names someone)", () => {
  it.each([
    ["NUL", "\u0000"],
    ["BEL", "\u0007"],
    ["HANGUL FILLER", "\u3164"],
    ["BRAILLE PATTERN BLANK", "\u2800"],
  ])("an approver made only of %s (nothing visible) is refused with INVALID_APPROVER and the agent stays SUSPENDED", async (_name, approver) => {
    const agent = new Pausable("a");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    await rejectsWithCode(r.runtime.resume("a", approver), "INVALID_APPROVER");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.resumes).toEqual([]);
  });
});

describe("approvers that display as someone else", () => {
  it.each([
    ["RIGHT-TO-LEFT OVERRIDE", "\u202Eecila"],
    ["RIGHT-TO-LEFT ISOLATE", "bob\u2067ecila"],
  ])("an approver with a %s (shows as another name) is refused with INVALID_APPROVER", async (_name, approver) => {
    const agent = new Pausable("a");
    const r = rig([agent]);
    await r.runtime.start();
    await r.runtime.suspend("a", "hold");
    await rejectsWithCode(r.runtime.resume("a", approver), "INVALID_APPROVER");
    expect(agent.status).toBe(S.SUSPENDED);
  });
});

describe("the agent.suspend receipt under SIGKILL (S9: an AuditEvent at each suspend)", () => {
  it("a kill after the marker's write and before its receipt still leaves the pause with its agent.suspend receipt once restarted, so its approval verifies", async () => {
    const { script, dir } = childScript(
      "civitas-pending-receipt-",
      (from) => `
import { AgentProcess, Runtime, silentLogger } from ${from("index")};
import { SqliteStateStore } from ${from("entries/sqlite")};
import { JsonlAuditSink } from ${from("entries/audit")};
const [mode, file, log] = process.argv.slice(2);
const say = (line) => process.stdout.write(JSON.stringify(line) + "\\n");
class Approvals extends AgentProcess {
  override async onSuspend(reason) {
    if (mode !== "first") return;
    say({ ev: "onSuspend", reason }); // the marker is on disk now; onSuspend notifies the approval queue
    await new Promise(() => {}); // killed here
  }
}
const agent = new Approvals("a");
const store = new SqliteStateStore(file);
const audit = new JsonlAuditSink(log, { key: "k" });
const runtime = new Runtime({ root: [agent], store, auditSink: audit, logger: silentLogger, keepAlive: false });
await runtime.start();
if (mode === "first") {
  void runtime.suspend("a", "approve INV-7");
} else {
  say({ ev: "start", status: agent.status, suspensionId: agent.suspension?.suspensionId ?? null });
  await runtime.resume("a", "alice");
  say({ ev: "resumed", status: agent.status });
  await runtime.stop();
  await audit.close();
  await store.close();
}
`,
    );
    const file = path.join(dir, "state.db");
    const log = path.join(dir, "audit.jsonl");
    const first = await runTsChild(script, ["first", file, log], { timeoutMs: 15_000, onLine: (line, kill) => line.includes("onSuspend") && kill() });
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const second = await runTsChild(script, ["second", file, log], { timeoutMs: 15_000 });
    expect(second.code, second.stderr).toBe(0);
    const start = JSON.parse(second.lines.find((l) => l.includes('"start"'))!) as { status: string; suspensionId: string | null };
    expect(start.status).toBe("SUSPENDED"); // the pause survived the kill...
    const verdict = await verifySuspension(log, "a", { key: "k" });
    // ...and its settlement must verify: one agent.suspend naming it, one agent.resume naming it.
    expect(verdict.failures).toEqual([]);
    expect(verdict.status).toBe("verified");
    expect(verdict.suspensions.map((x) => x.suspensionId)).toEqual([start.suspensionId]);
  }, 40_000);
});

describe("the pause's announcement under SIGKILL after its receipt", () => {
  it("a kill after the receipt and before the write recording it re-announces the pause on restart: two receipts of one suspension, which verifies", async () => {
    const { script, dir } = childScript(
      "civitas-pending-reannounce-",
      (from) => `
import { AgentProcess, Runtime, silentLogger, SUSPENSION_KEY } from ${from("index")};
import { SqliteStateStore } from ${from("entries/sqlite")};
import { JsonlAuditSink } from ${from("entries/audit")};
const [mode, file, log] = process.argv.slice(2);
const say = (line) => process.stdout.write(JSON.stringify(line) + "\\n");
class Approvals extends AgentProcess {
  suspends = 0;
  override async onSuspend() { this.suspends++; }
}
const sqlite = new SqliteStateStore(file);
const store = {
  durable: true,
  get: (name) => sqlite.get(name),
  list: () => sqlite.list(),
  delete: (name) => sqlite.delete(name),
  close: () => sqlite.close(),
  async set(name, state) {
    const marker = state[SUSPENSION_KEY];
    // The write that records the announcement (the marker no longer flagged): killed before it lands.
    if (mode === "first" && marker !== undefined && marker.announced === undefined) {
      say({ ev: "recording" });
      await new Promise(() => {});
    }
    return sqlite.set(name, state);
  },
};
const agent = new Approvals("a");
const audit = new JsonlAuditSink(log, { key: "k" });
const runtime = new Runtime({ root: [agent], store, auditSink: audit, logger: silentLogger, keepAlive: false });
await runtime.start();
if (mode === "first") {
  void runtime.suspend("a", "approve INV-7");
} else {
  say({ ev: "start", status: agent.status, suspends: agent.suspends, suspensionId: agent.suspension?.suspensionId ?? null });
  await runtime.resume("a", "alice");
  await runtime.stop();
  await audit.close();
  await sqlite.close();
}
`,
    );
    const file = path.join(dir, "state.db");
    const log = path.join(dir, "audit.jsonl");
    const first = await runTsChild(script, ["first", file, log], { timeoutMs: 15_000, onLine: (line, kill) => line.includes("recording") && kill() });
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const receiptsBefore = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.includes('"agent.suspend"'));
    expect(receiptsBefore).toHaveLength(1); // the receipt was on record when the kill came
    const second = await runTsChild(script, ["second", file, log], { timeoutMs: 15_000 });
    expect(second.code, second.stderr).toBe(0);
    const start = JSON.parse(second.lines.find((l) => l.includes('"start"'))!) as { status: string; suspends: number; suspensionId: string | null };
    expect(start.status).toBe("SUSPENDED");
    expect(start.suspends).toBe(1); // onSuspend ran again: at least once per pause, across the kill
    const receipts = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.includes('"agent.suspend"'));
    expect(receipts).toHaveLength(2);
    const verdict = await verifySuspension(log, "a", { key: "k" });
    expect(verdict.failures).toEqual([]);
    expect(verdict.status).toBe("verified");
    expect(verdict.suspensions.map((x) => x.suspensionId)).toEqual([start.suspensionId]);
  }, 40_000);
});
