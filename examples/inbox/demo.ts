/**
 * The inbox demo's world: a runtime built from `topology.yaml` with two
 * held payments (action-bound approvals under a two-stage rule) and two
 * paused agents, its receipts in a signed JSONL audit log, and the inbox
 * served on 127.0.0.1. Approvers sign in with HTTP Basic (`ana`, `ben`,
 * `carol`, password `demo`): a stand-in for your identity provider.
 */
import { readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AgentProcess, Runtime, silentLogger, type ApprovalPolicy, type Message } from "civitas-ts";
import { JsonlAuditSink } from "civitas-ts/audit";
import { serveInbox, type InboxServer } from "civitas-ts/http";

const AUDIT_KEY = "inbox-demo-key (use a real secret)";
const PASSWORD = "demo";
export const USERS = ["ana", "ben", "carol"];

/** Finance (ana or ben), then the CFO (carol), for payments of 1,000.00 or more. */
const policy: ApprovalPolicy = ({ message }) =>
  message.type === "pay" && Number(message.payload.amountCents) >= 100_000
    ? { decision: "require_approval", reason: `payment of ${(Number(message.payload.amountCents) / 100).toFixed(2)} to ${String(message.payload.to)}`, rule: { stages: [{ name: "finance", approvers: ["ana", "ben"], min: 1 }, { name: "cfo", approvers: ["carol"], min: 1 }], escalateAfterMs: 3_600_000, escalateTo: ["carol"], expiresInMs: 86_400_000 } }
    : { decision: "allow" };

/** Pays what reaches its handler: a held payment only once it is approved. */
class Treasury extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    console.log(`treasury: paid ${String(message.payload.invoice)} (approved by ${this.approval?.decidedBy ?? "policy"})`);
    return this.reply({ paid: true });
  }
}

/** Pauses itself (checkpoint-and-return) for a person to resume or deny. */
class Payer extends AgentProcess<{ pending: string | null }> {
  override state = { pending: null as string | null };
  override async handle(message: Message): Promise<void> {
    this.state.pending = String(message.payload.batch);
    this.suspend(`approve payout batch ${this.state.pending}`, { expiresInMs: 7_200_000 });
    await this.checkpoint();
  }
  override async onResume(approver: string): Promise<void> {
    console.log(`${this.name}: batch ${String(this.state.pending)} paid out, resumed by ${approver}`);
    this.state.pending = null;
    await this.checkpoint();
  }
  override async onDeny(decider: string, _marker: unknown, reason: string): Promise<void> {
    console.log(`${this.name}: batch ${String(this.state.pending)} dropped, denied by ${decider}: ${reason}`);
    this.state.pending = null;
    await this.checkpoint();
  }
}

/** Who sent a request: HTTP Basic against the demo users. */
function basicUser(header: string | undefined): string | undefined {
  if (header === undefined || !header.startsWith("Basic ")) return undefined;
  const [user, password] = Buffer.from(header.slice(6), "base64").toString("utf8").split(":");
  return user !== undefined && USERS.includes(user) && password === PASSWORD ? user : undefined;
}

/** What {@link startInboxDemo} runs. */
export interface InboxDemo {
  readonly inbox: InboxServer;
  readonly runtime: Runtime;
  stop(): Promise<void>;
}

/** Starts the demo on `port` (0: any free one). */
export async function startInboxDemo(port: number): Promise<InboxDemo> {
  const dir = mkdtempSync(path.join(tmpdir(), "civitas-inbox-demo-"));
  const auditLog = path.join(dir, "audit.jsonl");
  const audit = new JsonlAuditSink(auditLog, { key: AUDIT_KEY });
  const topology = readFileSync(new URL("./topology.yaml", import.meta.url), "utf8");
  const runtime = Runtime.fromTopology(topology, { agents: { Treasury, Payer }, approvalPolicy: policy, auditSink: audit, logger: silentLogger });
  await runtime.start();
  for (const [invoice, cents, to] of [["INV-1042", 1_250_000, "Globex Corporation"], ["INV-1043", 480_000, "Initech"]] as const) {
    void runtime.ask("treasury", { invoice, amountCents: cents, to, iban: "DE89 3704 0044 0532 0130 00", memo: "Quarterly licence renewal, see contract 2026-114 for the payment schedule and the clauses on late fees. ".repeat(3) }, { type: "pay", timeoutMs: 86_400_000 }).catch((error: Error) => console.log(`asker of ${invoice}: ${error.message}`));
  }
  await runtime.send("payer-eu", { batch: "EU-2026-12-04" });
  await runtime.send("payer-us", { batch: "US-2026-12-04" });
  while ((await runtime.approvals.list({ status: "pending" })).length < 2 || runtime.listSuspended().length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  const inbox = await serveInbox({
    runtime,
    port,
    authenticate: (req) => basicUser(req.headers.authorization),
    challenge: 'Basic realm="civitas inbox demo"',
    audit: { source: auditLog, key: AUDIT_KEY },
  });
  return {
    inbox,
    runtime,
    async stop() {
      await inbox.close();
      await runtime.stop();
      await audit.close();
    },
  };
}
