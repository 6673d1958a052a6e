// The payments worker of the cluster demo: one process hosting the "payments"
// agent on the NATS bus. Payments within policy are paid at once; a larger one
// is stored as pending, the agent suspends itself, and only an approver's
// resume — from any process on the bus — pays it. A wire transfer is held as
// one action (the agent keeps working) until two finance approvers voted,
// from any process. Its state, and so its pauses and held actions, live in PostgreSQL (CIVITAS_POSTGRES_URL, table CIVITAS_STATE_TABLE),
// written through a fenced view, where every process of the cluster can list them.
import { AgentProcess, MemoryAuditSink, Runtime, silentLogger, type ApprovalPolicy, type Message, type SuspensionMarker } from "civitas-ts";
import { NatsTransport } from "civitas-ts/nats";
import { PostgresStateStore } from "civitas-ts/postgres";

const POLICY_LIMIT = 1000;
const say = (line: string): void => void process.stdout.write(`[worker] ${line}\n`);

interface Payment {
  invoice: string;
  amount: number;
}

class Payments extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    const ledger = (this.state.ledger ?? []) as unknown as Payment[];
    if (message.type === "ledger") return this.reply({ ledger: ledger as never, pending: (this.state.pending ?? null) });
    if (message.type === "wire") {
      // Reached only once approved (the policy below held it): this.approval says by whom.
      const wire = message.payload as unknown as Payment;
      this.state.ledger = [...ledger, wire] as never;
      say(`wired ${wire.invoice} ${wire.amount.toFixed(2)}, approved by ${this.approval?.votes.map((vote) => vote.approver).join(" and ") ?? "nobody"}`);
      return this.reply({ wired: wire.invoice });
    }
    const payment = message.payload as unknown as Payment;
    if (payment.amount <= POLICY_LIMIT) {
      this.state.ledger = [...ledger, payment] as never;
      say(`paid ${payment.invoice} ${payment.amount.toFixed(2)} (within policy)`);
      return;
    }
    this.state.pending = payment as never;
    await this.checkpoint();
    this.suspend(`approve ${payment.invoice}: ${payment.amount.toFixed(2)}`);
    say(`${payment.invoice} ${payment.amount.toFixed(2)} needs approval: stored as pending, suspending`);
  }

  override async onResume(approver: string, marker: SuspensionMarker): Promise<void> {
    const pending = this.state.pending as unknown as Payment;
    this.state.ledger = [...((this.state.ledger ?? []) as unknown as Payment[]), pending] as never;
    delete this.state.pending;
    await this.checkpoint();
    say(`onResume(${approver}): paid ${pending.invoice} ${pending.amount.toFixed(2)} (suspension ${marker.suspensionId})`);
  }
}

const store = new PostgresStateStore(
  { connectionString: process.env.CIVITAS_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { table: process.env.CIVITAS_STATE_TABLE ?? "civitas_state", logger: silentLogger },
);
// This process owns "payments": its writes carry a fence, so a former owner could never overwrite them.
const fence = await store.nextFence();
await store.claim(["payments"], fence);
const audit = new MemoryAuditSink();
// Every wire transfer is held for two finance approvers; the rest is allowed.
const approvalPolicy: ApprovalPolicy = ({ message }) =>
  message.type === "wire"
    ? { decision: "require_approval", reason: "wire transfer", rule: { stages: [{ name: "finance", approvers: ["alice@finance", "bob@finance"], min: 2 }] } }
    : { decision: "allow" };
const runtime = new Runtime({
  root: [new Payments("payments")],
  store: store.fenced(fence),
  transport: new NatsTransport({ servers: process.env.NATS_URL ?? "127.0.0.1:4222" }),
  auditSink: audit,
  // The owner decides: only finance approvers may resume a payment.
  authorizeResume: (_agent, approver) => approver.endsWith("@finance"),
  approvalPolicy,
  logger: silentLogger,
});
await runtime.start();
say(`ready (pid ${process.pid}): payments is on the bus`);

process.on("SIGTERM", () => {
  void runtime.stop().then(async () => {
    await store.close(); // the runtime never closes a store it was given
    say(`stopped; pause receipts: ${audit.events.filter((e) => e.event.startsWith("agent.suspend") || e.event === "agent.resume" || e.event === "agent.deny").map((e) => e.event).join(", ")}`);
    say(`approval receipts: ${audit.events.filter((e) => e.event.startsWith("approval.")).map((e) => e.event).join(", ")}`);
    process.exit(0);
  });
});
