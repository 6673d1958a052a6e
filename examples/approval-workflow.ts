/**
 * `npm run demo`: an approval workflow that survives a real crash.
 *
 * A payments agent pays small amounts at once; a payment above 1000.00
 * needs a human's approval. Two OS processes share one SQLite file:
 *
 *   1. Process 1 pays INV-1 (40.00), then is asked for INV-2 (12500.00).
 *      handle() stores INV-2 as pending, calls this.suspend(), checkpoints
 *      (the action and its pause in one write) and returns; the agent is SUSPENDED and the pause is persisted with
 *      its state. This program then kills process 1 with SIGKILL.
 *   2. Process 2 starts on the same file: the agent comes back SUSPENDED,
 *      nothing is paid, a new payment waits in the mailbox. alice@finance
 *      approves that very pause (runtime.resume with its suspensionId);
 *      onResume pays INV-2 exactly once, then the waiting payment is made.
 *   3. Still in process 2, a second large payment (INV-4) is paused the same
 *      way, and bob@finance denies it (runtime.deny with its suspensionId):
 *      onDeny drops it, nothing is paid, and the pause cannot be approved
 *      afterwards.
 *
 * Finally it prints the ledger read from the SQLite file and the audit trail
 * both processes appended to. Run it with `npx tsx examples/approval-workflow.ts`.
 * (Started with `node <this file> node <step> <db> <audit>` it is one of the
 * payments processes: see examples/approval/payments.ts.)
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "civitas-ts";
import { verifyAuditLog, verifySuspension, type AuditRow } from "civitas-ts/audit";
import { SqliteStateStore } from "civitas-ts/sqlite";
import { AUDIT_KEY, DECIDER, money, runPaymentsNode, type Paid } from "./approval/payments.js";

const APPROVER = "alice@finance";
const WAIT_MS = 10_000;

type Report = JsonObject & { kind: string };

/** A payments process seen from the parent: its reports, bounded waits, and a way to kill it. */
class PaymentsProcess {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #reports: Report[] = [];
  #wake: () => void = () => undefined;
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly label: string,
    step: string,
    dbFile: string,
    auditFile: string,
  ) {
    const script = fileURLToPath(import.meta.url);
    const root = fileURLToPath(new URL("..", import.meta.url));
    this.#child = spawn(process.execPath, ["--import", "tsx", script, "node", step, dbFile, auditFile], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
    this.closed = new Promise((resolve) => this.#child.on("close", (code, signal) => resolve({ code, signal })));
    let partial = "";
    this.#child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const text of lines) {
        const report = JSON.parse(text) as Report;
        if (report.kind === "say") console.log(`  [${this.label}] ${String(report.text)}`);
        else this.#reports.push(report);
      }
      this.#wake();
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The next report of `kind`; rejects if the process ends or WAIT_MS pass first. */
  async next(kind: string): Promise<Report> {
    const deadline = Date.now() + WAIT_MS;
    let ended = false;
    void this.closed.then(() => {
      ended = true;
      this.#wake();
    });
    for (;;) {
      const at = this.#reports.findIndex((r) => r.kind === kind);
      if (at >= 0) return this.#reports.splice(at, 1)[0] as Report;
      if (ended || Date.now() >= deadline) throw new Error(`${this.label} ${ended ? "ended" : "went quiet"} before reporting '${kind}'`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Writes `line` to the process's stdin, then closes it: a node reads one line. */
  send(line: JsonObject): void {
    this.#child.stdin.end(`${JSON.stringify(line)}\n`);
  }

  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
  }

  /** How the process ended; kills it if it has not ended within WAIT_MS. */
  async ended(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const timer = setTimeout(() => this.kill(), WAIT_MS);
    try {
      return await this.closed;
    } finally {
      clearTimeout(timer);
    }
  }
}

async function readLedger(dbFile: string): Promise<{ ledger: Paid[]; pending: unknown }> {
  const store = new SqliteStateStore(dbFile);
  try {
    const state = await store.get("payments");
    return { ledger: (state?.ledger ?? []) as Paid[], pending: state?.pending ?? null };
  } finally {
    await store.close();
  }
}

function printAuditTrail(auditFile: string): AuditRow[] {
  const rows = readFileSync(auditFile, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as AuditRow);
  for (const r of rows) console.log(`  #${r.seq}  ${r.ts}  ${r.signerId}  ${r.event.padEnd(13)} ${r.agent}  ${JSON.stringify(r.details)}`);
  return rows;
}

/** Proves the trail offline, as an auditor would: the chain and signatures, then each suspension's settlement. */
async function verifyAuditTrail(auditFile: string): Promise<boolean> {
  const log = await verifyAuditLog(auditFile, { key: AUDIT_KEY });
  console.log(`verifyAuditLog: ${log.ok ? `intact, ${log.rows} signed rows in one hash chain` : `BROKEN at row ${String(log.brokenAt)}: ${String(log.reason)}`}`);
  const suspension = await verifySuspension(auditFile, "payments", { key: AUDIT_KEY });
  for (const s of suspension.suspensions) {
    console.log(`verifySuspension: suspension ${s.suspensionId} ("${s.reason}") ${s.status}: ${s.decision ?? "undecided"} by ${s.decidedBy ?? "nobody"} at ${s.settledAt ?? "-"}`);
  }
  console.log(`verifySuspension(payments): ${suspension.status}`);
  return log.ok && suspension.status === "verified";
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "civitas-approval-"));
  const dbFile = join(dir, "payments.db");
  const auditFile = join(dir, "audit.jsonl");
  const started: PaymentsProcess[] = [];
  try {
    console.log(`civitas-ts demo: an approval workflow across a SIGKILL (state in SQLite at ${dbFile})`);
    console.log("policy: payments above 1000.00 need a human's approval");

    // ---- process 1: pay, suspend for approval, get killed ----------------
    const first = new PaymentsProcess("process 1", "first", dbFile, auditFile);
    started.push(first);
    console.log(`started process 1 (pid ${String(first.pid)}) on the SQLite file`);
    const suspended = await first.next("suspended");
    if (suspended.durable !== true) throw new Error("the pause was not persisted; a crash now would lose it");
    console.log(`process 1 reports payments SUSPENDED under suspension ${String(suspended.suspensionId)}, durably`);
    console.log("killing process 1 with SIGKILL while payments is suspended");
    first.kill();
    const death = await first.ended();
    console.log(`process 1 was killed (signal ${String(death.signal)}): no shutdown hook ran, nothing more was written`);
    if (death.signal !== "SIGKILL") throw new Error(`process 1 ended with code ${String(death.code)}, not by SIGKILL`);

    // ---- process 2: restart SUSPENDED, approve, pay exactly once ---------
    const second = new PaymentsProcess("process 2", "second", dbFile, auditFile);
    started.push(second);
    console.log(`started process 2 (pid ${String(second.pid)}) on the same SQLite file`);
    const awaiting = await second.next("awaiting-approval");
    const suspensionId = String(awaiting.suspensionId); // the pause the approver was shown
    console.log(`${APPROVER} reviews "${String(awaiting.reason)}" and approves suspension ${suspensionId}`);
    second.send({ approve: { approver: APPROVER, suspensionId } });
    await second.next("done");
    const exit = await second.ended();
    console.log(`process 2 exited with code ${String(exit.code)}`);
    if (exit.code !== 0) throw new Error("process 2 failed");

    // ---- what is on disk ---------------------------------------------------
    const { ledger, pending } = await readLedger(dbFile);
    console.log("ledger, read from the SQLite file:");
    for (const p of ledger) {
      const pause = p.suspensionId === null ? "" : ` (suspension ${p.suspensionId})`;
      console.log(`  ${p.invoice}  ${money(p.cents).padStart(9)} to ${p.payee.padEnd(8)} approved by ${p.approvedBy}${pause}`);
    }
    const invoices = ledger.map((p) => p.invoice);
    const once = ["INV-1", "INV-2", "INV-3"].every((invoice) => invoices.filter((i) => i === invoice).length === 1) && invoices.length === 3;
    const approved = ledger.find((p) => p.invoice === "INV-2");
    console.log(`each payment exactly once: ${once ? "yes" : "NO"}; INV-2 approved by ${approved?.approvedBy ?? "nobody"}; INV-4 denied, paid: ${invoices.includes("INV-4") ? "YES" : "no"}; pending: ${pending === null ? "none" : JSON.stringify(pending)}`);
    if (!once || approved?.approvedBy !== APPROVER || approved.suspensionId !== suspended.suspensionId || pending !== null) {
      throw new Error("the ledger is not what the approval workflow promises");
    }

    console.log("audit trail (audit.jsonl, signed and hash-chained, appended by both processes; signer = the process):");
    const events = printAuditTrail(auditFile);
    if (!(await verifyAuditTrail(auditFile))) throw new Error("the audit trail does not verify");
    const resumes = events.filter((e) => e.event === "agent.resume");
    const denials = events.filter((e) => e.event === "agent.deny");
    const decidedOnce = events.filter((e) => e.event === "agent.suspend").length === 2 && resumes.length === 1 && denials.length === 1;
    console.log(`two pauses, each decided once: approved by ${String(resumes[0]?.details.approver)}, denied by ${String(denials[0]?.details.decider)}: ${decidedOnce && denials[0]?.details.decider === DECIDER ? "yes" : "NO"}`);
    console.log("done");
  } finally {
    for (const p of started) p.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

const [role, step, dbFile, auditFile] = process.argv.slice(2);
if (role === "node" && step !== undefined && dbFile !== undefined && auditFile !== undefined) {
  await runPaymentsNode(step, dbFile, auditFile);
} else {
  const watchdog = setTimeout(() => {
    console.error("the demo did not finish within 30 s");
    process.exit(1);
  }, 30_000);
  try {
    await main();
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  } finally {
    clearTimeout(watchdog);
  }
}
