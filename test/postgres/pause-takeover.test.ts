import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { SUSPENSION_KEY } from "../../src/index.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";

// Issue 21, item 2: an owner stalled past its lease (SIGSTOP), a successor takes the pause over, the
// former owner wakes up (SIGCONT) and approves: its caller gets STATE_FENCED, no receipt of it decides
// the pause, the successor's later decision is the only one, and verification says so.

const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = "takeover-key-0123456789";
const repoRoot = path.resolve(here, "..", "..");

/** A pause-owner.ts child: its stdout lines, a way to wait for one, and to send it a command. */
class Owner {
  readonly lines: string[] = [];
  readonly child: ChildProcessWithoutNullStreams;
  #stderr = "";
  #waiters: (() => void)[] = [];

  constructor(schema: string, owner: string, checkOwner: boolean, hold = false) {
    const args = [path.join(here, "fixtures", "pause-owner.ts"), PG_URL, schema, owner, KEY, checkOwner ? "yes" : "no", ...(hold ? ["hold"] : [])];
    this.child = spawn(process.execPath, ["--import", "tsx", ...args], { cwd: repoRoot });
    let pending = "";
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (this.#stderr += chunk));
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      const complete = pending.split("\n");
      pending = complete.pop() ?? "";
      this.lines.push(...complete);
      for (const wake of this.#waiters.splice(0)) wake();
    });
    this.child.on("close", () => {
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  /** The first line matching `pattern`, waiting at most `timeoutMs` for it. */
  async line(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((line) => pattern.test(line));
      if (found !== undefined) return found;
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`no line ${String(pattern)}; stdout:\n${this.lines.join("\n")}\nstderr:\n${this.#stderr}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  send(command: string): void {
    this.child.stdin.write(`${command}\n`);
  }

  /** SIGKILLs the child (when still running) and waits until it has exited. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const closed = new Promise((resolve) => this.child.once("close", resolve));
    this.child.kill("SIGKILL");
    await closed;
  }
}

let schema: TestSchema;
const owners: Owner[] = [];
beforeEach(async () => {
  schema = await createTestSchema("takeover");
});
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => owner.kill()));
  await schema.drop();
});

/** `owner` denies as bob, stops, and has asked its authorizeResume about bob's denial alone and run no onResume. */
async function expectDeniedByBobOnly(owner: Owner): Promise<void> {
  owner.send("deny bob");
  expect(await owner.line(/^(ok|error) deny/)).toBe("ok deny");
  expect(await owner.line(/^onDeny /)).toBe("onDeny bob");
  owner.send("stop");
  await owner.line(/^stopped$/);
  expect(owner.lines.filter((line) => line.startsWith("authorize"))).toEqual(["authorize bob deny"]);
  expect(owner.lines.some((line) => line.startsWith("onResume"))).toBe(false);
}

/** Starts the first owner (owner-a), has it suspend the payer, and returns it with its fence. */
async function suspendingOwner(checkOwner: boolean): Promise<{ a: Owner; fenceA: number }> {
  const a = new Owner(schema.name, "owner-a", checkOwner);
  owners.push(a);
  const fenceA = Number((await a.line(/^ready /)).split(" ")[1]);
  a.send("suspend");
  await a.line(/^ok suspend$/);
  return { a, fenceA };
}

describe.each([
  { checkOwner: true, label: "with the owner checked in the append's transaction (stateTable)" },
  { checkOwner: false, label: "with receipts stamped with their fence only" },
])("a takeover of a pause, $label", ({ checkOwner }) => {
  it("the former owner's approval after the takeover is refused with STATE_FENCED; the successor's deny is the only decision", async () => {
    const { a, fenceA } = await suspendingOwner(checkOwner);
    const store = new PostgresStateStore({ pool: schema.pool }, { table: `${schema.name}.state`, fenceSequence: `${schema.name}.fences` });
    const marker = (await store.get("payer"))?.[SUSPENSION_KEY] as { suspensionId: string };
    expect(marker.suspensionId).toBeTypeOf("string");

    // The owner stalls past its lease; a successor takes the group and the agent over.
    a.child.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const b = new Owner(schema.name, "owner-b", checkOwner);
    owners.push(b);
    const fenceB = Number((await b.line(/^ready /)).split(" ")[1]);
    expect(fenceB).toBeGreaterThan(fenceA);
    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table: `${schema.name}.audit` });
    // The successor's start is on record (stamped with its fence) before the former owner wakes up.
    for (let i = 0; !(await sink.rows()).some((row) => row.event === "agent.start" && row.signerId === "owner-b"); i++) {
      expect(i).toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    a.child.kill("SIGCONT");
    a.send("resume mallory");
    expect(await a.line(/^(ok|error) resume/)).toBe("error resume STATE_FENCED");
    expect(a.lines, a.lines.join("\n")).toContain("authorize mallory approve");
    expect(a.lines.some((line) => line.startsWith("onResume"))).toBe(false);

    // The successor's authorizeResume saw every decision it carried out, and it carried out only bob's.
    await expectDeniedByBobOnly(b);

    const rows = await sink.rows();
    const settlements = rows.filter((row) => ["agent.resume", "agent.deny"].includes(row.event));
    const verified = await verifySuspension(rows, "payer", { key: KEY });
    expect(verified.suspensions).toHaveLength(1);
    expect(verified.suspensions[0]).toMatchObject({ suspensionId: marker.suspensionId, decision: "denied", decidedBy: "bob" });
    if (checkOwner) {
      // Refused in the append's transaction: the chain never held the former owner's approval.
      expect(settlements.map((row) => [row.event, row.signerId, row.details.fence])).toEqual([["agent.deny", "owner-b", fenceB]]);
      expect(verified.status).toBe("verified");
    } else {
      // On record, but stamped with the fence the successor had already replaced: not a decision.
      expect(settlements.map((row) => [row.event, row.signerId, row.details.fence])).toEqual([
        ["agent.resume", "owner-a", fenceA],
        ["agent.deny", "owner-b", fenceB],
      ]);
      expect(verified.status).toBe("failed");
      expect(verified.failures).toEqual([expect.stringMatching(/a resume of suspension '.*' of 'payer' was written at fence \d+ after fence \d+ took 'payer' over/)]);
    }
    expect((await store.get("payer"))?.[SUSPENSION_KEY]).toBeUndefined();
    await store.close();
  }, 90_000);

  it("the former owner's approval between the successor's claim and the end of its start is not rolled forward by it", async () => {
    const { a, fenceA } = await suspendingOwner(checkOwner);
    a.child.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The successor has put its claim on record and claimed the row; its start (the roll forward) waits.
    const b = new Owner(schema.name, "owner-b", checkOwner, true);
    owners.push(b);
    await b.line(/^claimed$/);

    a.child.kill("SIGCONT");
    a.send("resume mallory");
    expect(await a.line(/^(ok|error) resume/)).toBe("error resume STATE_FENCED");
    b.send("go");
    const fenceB = Number((await b.line(/^ready /)).split(" ")[1]);
    await expectDeniedByBobOnly(b);

    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table: `${schema.name}.audit` });
    const rows = await sink.rows();
    const order = rows.filter((row) => ["agent.claimed", "agent.resume", "agent.deny"].includes(row.event)).map((row) => [row.event, row.signerId, row.details.fence]);
    const verified = await verifySuspension(rows, "payer", { key: KEY });
    expect(verified.suspensions[0]).toMatchObject({ decision: "denied", decidedBy: "bob" });
    if (checkOwner) {
      expect(order).toEqual([
        ["agent.claimed", "owner-a", fenceA],
        ["agent.claimed", "owner-b", fenceB],
        ["agent.deny", "owner-b", fenceB],
      ]);
      expect(verified.status).toBe("verified");
    } else {
      // The former owner's approval is on record after the successor's claim: written by a fenced-out owner.
      expect(order).toEqual([
        ["agent.claimed", "owner-a", fenceA],
        ["agent.claimed", "owner-b", fenceB],
        ["agent.resume", "owner-a", fenceA],
        ["agent.deny", "owner-b", fenceB],
      ]);
      expect(verified.status).toBe("failed");
    }
  }, 90_000);
});
