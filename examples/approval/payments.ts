/**
 * The payments agent of examples/approval-workflow.ts, and the code one
 * "payments node" process runs. The parent process starts two of these on
 * the same SQLite file and SIGKILLs the first one.
 *
 * A node talks to the parent in JSON lines: on stdout it writes
 * `{ "kind": "say", "text": ... }` (a step, in plain words) and a few facts
 * the parent waits for (`suspended`, `awaiting-approval`, `done`); on stdin
 * it reads the approval `{ "approve": { "approver", "suspensionId" } }`.
 * The second node also has a large payment denied (`runtime.deny`).
 */
import { createInterface } from "node:readline";
import { AgentProcess, CivitasError, Runtime, type AuditEvent, type AuditSink, type JsonObject, type Message, type SuspensionMarker } from "civitas-ts";
import { JsonlAuditSink } from "civitas-ts/audit";
import { SqliteStateStore } from "civitas-ts/sqlite";

/** Who denies the second large payment in the demo. */
export const DECIDER = "bob@finance";

/** Payments above this many cents need a human's approval. */
export const APPROVAL_LIMIT_CENTS = 100_000;

export type Payment = { invoice: string; cents: number; payee: string };
export type Paid = Payment & { approvedBy: string; suspensionId: string | null };
export type PaymentsState = { ledger: Paid[]; pending: Payment | null };

export function money(cents: number): string {
  return (cents / 100).toFixed(2);
}

/**
 * Pays small amounts at once. A large one needs approval, and an approval
 * can take hours, outlive this process, and must never be assumed:
 * checkpoint-and-return. handle() stores the payment as `pending`, calls
 * `this.suspend(...)`, checkpoints (the action and its pause in one write)
 * and returns; the runtime enters the pause after handle() returns. Only
 * `onResume(approver)` makes the payment; `onDeny(decider)` drops it.
 */
export class Payments extends AgentProcess<PaymentsState> {
  override state: PaymentsState = { ledger: [], pending: null };
  readonly #say: (text: string) => void;
  /** The pause the agent is in (or was last in): what an approval settles. */
  #pause: string | null = null;

  constructor(name: string, say: (text: string) => void) {
    super(name);
    this.#say = say;
  }

  override async onStart(): Promise<void> {
    this.#pause = this.suspension?.suspensionId ?? null;
    // A crash between the checkpoint in handle() and the pause's own write,
    // or between a resume and onResume's checkpoint, leaves a pending payment
    // without a pause. Local state is never an approval: pause again.
    const pending = this.state.pending;
    if (pending !== null && this.suspension === undefined) this.suspend(`approve payment ${pending.invoice} (asked again after a restart)`);
  }

  override async handle(message: Message): Promise<Message | void> {
    if (message.type === "ledger") return this.reply({ ledger: this.state.ledger, pending: this.state.pending });
    const payment: Payment = { invoice: String(message.payload.invoice), cents: Number(message.payload.cents), payee: String(message.payload.payee) };
    if (this.state.ledger.some((p) => p.invoice === payment.invoice) || this.state.pending?.invoice === payment.invoice) {
      return this.reply({ status: "duplicate" }); // an invoice is paid once, however often it is sent
    }
    if (payment.cents <= APPROVAL_LIMIT_CENTS) {
      this.state.ledger.push({ ...payment, approvedBy: "policy", suspensionId: null });
      await this.checkpoint();
      return this.reply({ status: "paid" });
    }
    // Checkpoint-and-return: the approval may take days; handle() does not wait for it.
    // suspend() first: the checkpoint after it stores the pending payment and the pause in one write.
    this.state.pending = payment;
    this.suspend(`approve payment ${payment.invoice}: ${money(payment.cents)} to ${payment.payee}`);
    await this.checkpoint();
    return this.reply({ status: "awaiting-approval" });
  }

  override async onSuspend(reason: string): Promise<void> {
    this.#pause = this.suspension?.suspensionId ?? null;
    this.#say(`onSuspend: payments paused (${reason}); the pause and the pending payment are in SQLite`);
  }

  override async onResume(approver: string): Promise<void> {
    const payment = this.state.pending;
    if (payment === null) return;
    this.state.ledger.push({ ...payment, approvedBy: approver, suspensionId: this.#pause });
    this.state.pending = null;
    await this.checkpoint(); // the payment and the end of `pending`, in one write
    this.#say(`onResume(${approver}): paid ${payment.invoice} ${money(payment.cents)} to ${payment.payee}`);
  }

  override async onDeny(decider: string, _marker: SuspensionMarker, reason: string): Promise<void> {
    const payment = this.state.pending;
    if (payment === null) return;
    this.state.pending = null;
    await this.checkpoint(); // the end of `pending`: the denied payment is never made
    this.#say(`onDeny(${decider}): dropped ${payment.invoice} ${money(payment.cents)} to ${payment.payee} ("${reason}"); nothing paid`);
  }
}

/** The demo's audit key; a real deployment takes it from a secret store (CIVITAS_AUDIT_KEY). */
export const AUDIT_KEY = "demo-audit-key";

/**
 * The signed, hash-chained JSONL audit log (`civitas-ts/audit`), observed so
 * the node can report once a receipt is on disk: `emit` resolves only after
 * the row is fsync'ed, so the receipts of a process that is SIGKILLed are on
 * disk up to the kill.
 */
class ObservedAuditLog implements AuditSink {
  readonly #log: JsonlAuditSink;
  readonly #listeners = new Set<(event: AuditEvent) => void>();

  constructor(path: string) {
    this.#log = new JsonlAuditSink(path, { key: AUDIT_KEY, signerId: `payments-node-${process.pid}` });
  }

  async emit(event: AuditEvent): Promise<void> {
    await this.#log.emit(event);
    for (const listener of this.#listeners) listener(event);
  }

  close(): Promise<void> {
    return this.#log.close();
  }

  /** The next event named `event`, or a rejection after `timeoutMs`. */
  next(event: string, timeoutMs: number): Promise<AuditEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`no ${event} audit event within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (e: AuditEvent): void => {
        if (e.event !== event) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve(e);
      };
      this.#listeners.add(listener);
    });
  }
}

const WAIT_MS = 10_000;

function report(line: JsonObject): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function say(text: string): void {
  report({ kind: "say", text });
}

async function codeOf(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
    return "no error";
  } catch (error) {
    return error instanceof CivitasError ? error.code : String(error);
  }
}

function ledgerText(ledger: readonly Paid[]): string {
  return ledger.length === 0 ? "empty" : ledger.map((p) => `${p.invoice} ${money(p.cents)}`).join(", ");
}

/** The first line on stdin, parsed, or a rejection after `timeoutMs`. */
function readApproval(timeoutMs: number): Promise<{ approver: string; suspensionId: string }> {
  const lines = createInterface({ input: process.stdin });
  return new Promise<{ approver: string; suspensionId: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no approval on stdin within ${timeoutMs} ms`)), timeoutMs);
    lines.once("line", (text) => {
      clearTimeout(timer);
      const { approve } = JSON.parse(text) as { approve: { approver: string; suspensionId: string } };
      resolve(approve);
    });
  }).finally(() => lines.close());
}

/**
 * One payments node: a Runtime on `dbFile`. Step "first" pays a small and
 * asks for a large payment, reports once the agent is SUSPENDED, then waits
 * to be killed. Step "second" restarts on the same file and goes through
 * the approval.
 */
export async function runPaymentsNode(step: string, dbFile: string, auditFile: string): Promise<void> {
  const store = new SqliteStateStore(dbFile);
  const audit = new ObservedAuditLog(auditFile);
  const payments = new Payments("payments", say);
  const runtime = new Runtime({ root: payments, store, auditSink: audit, signerId: `payments-node-${process.pid}` });
  await runtime.start();

  if (step === "first") {
    say(`payments started ${payments.status}; ledger: ${ledgerText(payments.state.ledger)}`);
    const small = await runtime.ask("payments", { invoice: "INV-1", cents: 4_000, payee: "acme" }, { timeoutMs: WAIT_MS });
    say(`pay INV-1 40.00 to acme: ${String(small.payload.status)} (within policy)`);
    const receipt = audit.next("agent.suspend", WAIT_MS); // emitted once the pause is persisted
    const large = await runtime.ask("payments", { invoice: "INV-2", cents: 1_250_000, payee: "globex" }, { timeoutMs: WAIT_MS });
    say(`pay INV-2 12500.00 to globex: ${String(large.payload.status)} (handle() stored it as pending, called this.suspend(), checkpointed and returned)`);
    const suspended = await receipt;
    // Suspending a paused agent changes nothing and resolves once its pause is fully on record
    // (receipt written, the record marked announced): from here a kill does not make it announce again.
    await runtime.suspend("payments", String(suspended.details.reason));
    say(`payments is ${payments.status}; nothing was paid for INV-2; ledger: ${ledgerText(payments.state.ledger)}`);
    report({ kind: "suspended", suspensionId: String(suspended.details.suspensionId), durable: suspended.details.durable ?? false });
    // Wait for the SIGKILL; give up (and fail) if it never comes.
    setTimeout(() => {
      process.stderr.write("the first payments node was never killed\n");
      process.exit(1);
    }, WAIT_MS);
    return;
  }

  // step "second": the same SQLite file, a new process.
  say(`payments restarted ${payments.status} from the marker in SQLite (a restore: onSuspend does not run again)`);
  for (const s of runtime.listSuspended()) {
    say(`listSuspended(): ${s.name} since ${s.since}, reason "${s.reason}", suspensionId ${s.suspensionId}`);
  }
  say(`ledger after the restart: ${ledgerText(payments.state.ledger)}; pending: ${payments.state.pending?.invoice ?? "none"}`);

  // Business sent now waits in the mailbox until the agent is resumed.
  const third = runtime.ask("payments", { invoice: "INV-3", cents: 2_500, payee: "initech" }, { timeoutMs: WAIT_MS });
  await new Promise((resolve) => setTimeout(resolve, 100));
  say(`asked to pay INV-3 25.00 to initech: the ask waits (${payments.mailbox.size} message queued); ledger still: ${ledgerText(payments.state.ledger)}`);
  say(`an ask with failIfSuspended fails fast: ${await codeOf(runtime.ask("payments", {}, { type: "ledger", failIfSuspended: true }))}`);
  say(`a resume without a real approver is refused: ${await codeOf(runtime.resume("payments", " "))}`);

  const marker = payments.suspension;
  if (marker === undefined) throw new Error("payments did not come back SUSPENDED");
  report({ kind: "awaiting-approval", suspensionId: marker.suspensionId, reason: marker.reason });
  const approval = await readApproval(WAIT_MS);
  await runtime.resume("payments", approval.approver, { suspensionId: approval.suspensionId });
  say(`runtime.resume("payments", "${approval.approver}", { suspensionId }) resolved: payments is ${payments.status}`);
  say(`the waiting ask for INV-3 is answered: ${String((await third).payload.status)}`);
  say(`the same approval again: ${await codeOf(runtime.resume("payments", approval.approver, { suspensionId: approval.suspensionId }))} (an approval settles one pause, once)`);
  say(`INV-2 sent again: ${String((await runtime.ask("payments", { invoice: "INV-2", cents: 1_250_000, payee: "globex" }, { timeoutMs: WAIT_MS })).payload.status)}`);

  // A second large payment: paused like the first, and this time the answer is no.
  const paused = audit.next("agent.suspend", WAIT_MS);
  const fourth = await runtime.ask("payments", { invoice: "INV-4", cents: 980_000, payee: "umbrella" }, { timeoutMs: WAIT_MS });
  say(`pay INV-4 9800.00 to umbrella: ${String(fourth.payload.status)}`);
  const denied = String((await paused).details.suspensionId);
  await runtime.deny("payments", DECIDER, { suspensionId: denied, reason: "umbrella is not an approved supplier" });
  say(`runtime.deny("payments", "${DECIDER}", { suspensionId, reason }) resolved: payments is ${payments.status}; ledger: ${ledgerText(payments.state.ledger)}`);
  say(`approving the denied pause afterwards: ${await codeOf(runtime.resume("payments", approval.approver, { suspensionId: denied }))} (a pause is decided once)`);

  await runtime.stop();
  await store.close();
  await audit.close();
  say("stopped cleanly");
  report({ kind: "done" });
}
