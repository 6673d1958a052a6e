/**
 * A SIGKILL at any point of a pause (the write of the pause with its pending
 * action, its agent.suspend receipt, the write recording the announcement)
 * leaves a pause that restarts SUSPENDED and verifies.
 *
 * Each test pins a defect found by the second review of durable suspension and
 * state (SPEC §5, §8, §11) (these tests were in
 * test/review/suspension2-review.test.ts).
 */

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { ProcessStatus, SUSPENSION_KEY } from "../../../src/index.js";
import { verifySuspension } from "../../../src/entries/audit.js";
import { waitUntil } from "../../support/agents.js";
import { runTsChild } from "../../support/child-process.js";
import { Pausable, startedRig, teardown } from "./helpers.js";

afterEach(teardown);

const S = ProcessStatus;

/**
 * Writes `body` as a child script into a fresh temp dir (named after `prefix`,
 * removed when the test finishes) and returns its path with the paths of the
 * SQLite file and the audit log it is to use. The script starts with what
 * every one of them needs: the imports (AgentProcess, Runtime, silentLogger,
 * SUSPENSION_KEY, SqliteStateStore, JsonlAuditSink, from src), its arguments
 * `mode`, `file` and `log`, `say(line)`, which prints `line` as JSON, and
 * `pauseOrSettle(agent, store, startFields)`: a runtime of `agent` ("a") on
 * `store` and the audit log, started; in mode "first" it suspends "a" (the
 * test kills it on the way), otherwise it prints the "start" line (status,
 * suspensionId and `startFields()`), resumes "a" as alice and closes it all.
 */
function childScript(prefix: string, body: string): { script: string; file: string; log: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  const from = (module: string): string => JSON.stringify(path.join(path.resolve("src"), `${module}.js`));
  const script = path.join(dir, "child.mts");
  fs.writeFileSync(
    script,
    `
import { AgentProcess, Runtime, silentLogger, SUSPENSION_KEY } from ${from("index")};
import { SqliteStateStore } from ${from("entries/sqlite")};
import { JsonlAuditSink } from ${from("entries/audit")};
const [mode, file, log] = process.argv.slice(2);
const say = (line) => process.stdout.write(JSON.stringify(line) + "\\n");
const pauseOrSettle = async (agent, store, startFields = () => ({})) => {
  const audit = new JsonlAuditSink(log, { key: "k" });
  const runtime = new Runtime({ root: [agent], store, auditSink: audit, logger: silentLogger, keepAlive: false });
  await runtime.start();
  if (mode === "first") {
    void runtime.suspend("a", "approve INV-7");
    return;
  }
  say({ ev: "start", status: agent.status, ...startFields(), suspensionId: agent.suspension?.suspensionId ?? null });
  await runtime.resume("a", "alice");
  say({ ev: "resumed", status: agent.status });
  await runtime.stop();
  await audit.close();
  await store.close();
};
${body}`,
  );
  return { script, file: path.join(dir, "state.db"), log: path.join(dir, "audit.jsonl") };
}

/** Runs `script` with `args` until it prints a line containing `cue`, SIGKILLs it there, and asserts the kill ended it. */
async function killAt(script: string, args: string[], cue: string): Promise<void> {
  const first = await runTsChild(script, args, { timeoutMs: 15_000, onLine: (line, kill) => line.includes(cue) && kill() });
  expect(first.signal, first.stderr).toBe("SIGKILL");
}

/** Runs `script` with `args` to its end, asserts it exited 0, and returns the JSON line it printed with `"start"` in it. */
async function startLine<T>(script: string, args: string[]): Promise<T> {
  const second = await runTsChild(script, args, { timeoutMs: 15_000 });
  expect(second.code, second.stderr).toBe(0);
  return JSON.parse(second.lines.find((l) => l.includes('"start"'))!) as T;
}

/** Asserts the audit `log` verifies agent `a`'s suspensions, and that they are exactly the one `suspensionId`. */
async function expectOneVerifiedPause(log: string, suspensionId: string | null): Promise<void> {
  const verdict = await verifySuspension(log, "a", { key: "k" });
  expect(verdict.failures).toEqual([]);
  expect(verdict.status).toBe("verified");
  expect(verdict.suspensions.map((x) => x.suspensionId)).toEqual([suspensionId]);
}

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
    const r = await startedRig([agent]);
    await waitUntil(() => agent.status === S.SUSPENDED, "suspended");
    const withAction = r.store.setsOf("due").filter((s) => s.state.pending === "INV-9");
    expect(withAction.length).toBeGreaterThan(0);
    // The first write of the pending action must carry its pause, as it does from handle():
    // a kill -9 right after it would otherwise restart RUNNING with an unapproved action.
    expect(withAction[0]!.state[SUSPENSION_KEY]).toBeDefined();
  });

  it("under SIGKILL right after that checkpoint, the restarted agent is SUSPENDED, not RUNNING with the pending action", async () => {
    const { script, file } = childScript(
      "civitas-pending-onstart-",
      `
class Due extends AgentProcess {
  override async onStart() {
    if (mode !== "first") return;
    this.state.pending = "INV-9";
    this.suspend("approve INV-9");
    await this.checkpoint();
    say({ ev: "checkpointed" });
    await new Promise(() => {}); // e.g. still talking to the approval queue: killed here
  }
}
const agent = new Due("due");
const store = new SqliteStateStore(file);
const runtime = new Runtime({ root: [agent], store, logger: silentLogger, keepAlive: false });
await runtime.start();
say({ ev: "start", status: agent.status, pending: agent.state.pending ?? null });
await runtime.stop();
await store.close();
`,
    );
    await killAt(script, ["first", file], "checkpointed");
    const start = await startLine<{ status: string; pending: string | null }>(script, ["report", file]);
    expect(start.pending).toBe("INV-9");
    expect(start.status).toBe("SUSPENDED");
  }, 40_000);
});

describe("the agent.suspend receipt under SIGKILL (S9: an AuditEvent at each suspend)", () => {
  it("a kill after the marker's write and before its receipt still leaves the pause with its agent.suspend receipt once restarted, so its approval verifies", async () => {
    const { script, file, log } = childScript(
      "civitas-pending-receipt-",
      `
class Approvals extends AgentProcess {
  override async onSuspend(reason) {
    if (mode !== "first") return;
    say({ ev: "onSuspend", reason }); // the marker is on disk now; onSuspend notifies the approval queue
    await new Promise(() => {}); // killed here
  }
}
await pauseOrSettle(new Approvals("a"), new SqliteStateStore(file));
`,
    );
    await killAt(script, ["first", file, log], "onSuspend");
    const start = await startLine<{ status: string; suspensionId: string | null }>(script, ["second", file, log]);
    expect(start.status).toBe("SUSPENDED"); // the pause survived the kill...
    // ...and its settlement must verify: one agent.suspend naming it, one agent.resume naming it.
    await expectOneVerifiedPause(log, start.suspensionId);
  }, 40_000);
});

describe("the pause's announcement under SIGKILL after its receipt", () => {
  it("a kill after the receipt and before the write recording it re-announces the pause on restart: two receipts of one suspension, which verifies", async () => {
    const { script, file, log } = childScript(
      "civitas-pending-reannounce-",
      `
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
await pauseOrSettle(agent, store, () => ({ suspends: agent.suspends }));
`,
    );
    await killAt(script, ["first", file, log], "recording");
    const receiptsBefore = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.includes('"agent.suspend"'));
    expect(receiptsBefore).toHaveLength(1); // the receipt was on record when the kill came
    const start = await startLine<{ status: string; suspends: number; suspensionId: string | null }>(script, ["second", file, log]);
    expect(start.status).toBe("SUSPENDED");
    expect(start.suspends).toBe(1); // onSuspend ran again: at least once per pause, across the kill
    const receipts = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.includes('"agent.suspend"'));
    expect(receipts).toHaveLength(2);
    await expectOneVerifiedPause(log, start.suspensionId);
  }, 40_000);
});
