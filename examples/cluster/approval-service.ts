// The approval service of the cluster demo: another process on the same NATS
// bus. It sends payments to the worker's agent, lists the suspended agents of
// the cluster from the shared PostgreSQL store (listSuspended({ scope:
// "cluster" })), and resumes one on an approver's word; the worker decides,
// receipts and pays. Then it votes on a wire transfer the worker holds as one
// action: the votes travel to the worker, whose rule counts them.
import { AgentProcess, Runtime, silentLogger, type ApprovalView, type CivitasError, type SuspendedAgent } from "civitas-ts";
import { NatsTransport } from "civitas-ts/nats";
import { PostgresStateStore } from "civitas-ts/postgres";

const say = (line: string): void => void process.stdout.write(`[approvals] ${line}\n`);

class Desk extends AgentProcess {}

const transport = new NatsTransport({ servers: process.env.NATS_URL ?? "127.0.0.1:4222" });
// The same table as the worker's: this runtime reads the worker's pauses from it; it writes only its own desk's state.
const store = new PostgresStateStore(
  { connectionString: process.env.CIVITAS_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  { table: process.env.CIVITAS_STATE_TABLE ?? "civitas_state", logger: silentLogger },
);
const runtime = new Runtime({ root: [new Desk("approval-desk")], store, transport, logger: silentLogger });
await runtime.start();
say(`ready: agents on the bus: ${transport.remoteAgents().join(", ")}`);

await runtime.send("payments", { invoice: "INV-1", amount: 40 });
await runtime.send("payments", { invoice: "INV-2", amount: 12500 });

// Every suspended agent of the cluster, wherever it runs: one query on the shared store's marker column.
let suspended: SuspendedAgent[] = [];
for (let tries = 0; suspended.length === 0 && tries < 50; tries++) {
  suspended = await runtime.listSuspended({ scope: "cluster" });
  if (suspended.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
}
for (const agent of suspended) say(`suspended in the cluster: ${agent.name}, reason "${agent.reason}", suspensionId ${agent.suspensionId}`);
const payments = suspended.find((agent) => agent.name === "payments");
if (payments === undefined) throw new Error("payments did not suspend");

const refused = await runtime.resume("payments", "mallory@sales", { suspensionId: payments.suspensionId }).then(() => "resumed", (error: CivitasError) => error.code);
say(`a resume by mallory@sales: ${refused} (the worker's authorizeResume said no)`);
await runtime.resume("payments", "alice@finance", { suspensionId: payments.suspensionId });
say(`alice@finance approved suspension ${payments.suspensionId}: payments is ${(await transport.status("payments")).status}`);
const again = await runtime.resume("payments", "alice@finance", { suspensionId: payments.suspensionId }).then(() => "resumed", (error: CivitasError) => error.code);
say(`the same approval again: ${again}`);
say(`suspended in the cluster now: ${(await runtime.listSuspended({ scope: "cluster" })).length} agents`);
const ledger = (await runtime.ask("payments", {}, { type: "ledger" })).payload;
say(`ledger: ${JSON.stringify(ledger.ledger)}; pending: ${JSON.stringify(ledger.pending)}`);

// A held action of the worker's agent: listed from the shared store, voted on here, decided there.
const wiring = runtime.ask("payments", { invoice: "INV-3", amount: 30000 }, { type: "wire", timeoutMs: 20_000 });
let held: ApprovalView[] = [];
for (let tries = 0; held.length === 0 && tries < 50; tries++) {
  held = await runtime.approvals.list({ scope: "cluster", status: "pending" });
  if (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
}
const [wire] = held;
if (wire === undefined) throw new Error("the wire transfer was not held");
say(`held in the cluster: ${wire.agent} ${wire.message.type} ${JSON.stringify(wire.message.payload)}, approvalId ${wire.approvalId}`);
const stranger = await runtime.approvals.approve(wire.approvalId, "mallory@sales").then(() => "counted", (error: CivitasError) => error.code);
say(`a vote by mallory@sales: ${stranger}`);
const first = await runtime.approvals.approve(wire.approvalId, "alice@finance");
say(`alice@finance voted: ${first.status}, ${first.votes.length} of 2`);
const last = await runtime.approvals.approve(wire.approvalId, "bob@finance");
say(`bob@finance voted: ${last.status}`);
say(`the wire's reply: ${JSON.stringify((await wiring).payload)}`);
await runtime.stop();
await store.close();
say("done");
