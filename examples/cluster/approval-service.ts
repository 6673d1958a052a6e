// The approval service of the cluster demo: another process on the same NATS
// bus. It sends payments to the worker's agent, finds the suspended agents of
// the cluster, and resumes one on an approver's word; the worker decides,
// receipts and pays.
import { AgentProcess, Runtime, silentLogger, type CivitasError } from "civitas-ts";
import { NatsTransport } from "civitas-ts/nats";

const say = (line: string): void => void process.stdout.write(`[approvals] ${line}\n`);

class Desk extends AgentProcess {}

const transport = new NatsTransport({ servers: process.env.NATS_URL ?? "127.0.0.1:4222" });
const runtime = new Runtime({ root: [new Desk("approval-desk")], transport, logger: silentLogger });
await runtime.start();
say(`ready: agents on the bus: ${transport.remoteAgents().join(", ")}`);

await runtime.send("payments", { invoice: "INV-1", amount: 40 });
await runtime.send("payments", { invoice: "INV-2", amount: 12500 });

// Every suspended agent of the cluster, as its owner reports it.
let suspended = [] as Awaited<ReturnType<typeof transport.status>>[];
for (let tries = 0; suspended.length === 0 && tries < 50; tries++) {
  suspended = (await Promise.all(transport.remoteAgents().map((name) => transport.status(name)))).filter((agent) => agent.status === "SUSPENDED");
  if (suspended.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
}
for (const agent of suspended) say(`suspended in the cluster: ${agent.name}, reason "${agent.reason}", suspensionId ${agent.suspensionId}`);
const payments = suspended.find((agent) => agent.name === "payments");
if (payments?.suspensionId == null) throw new Error("payments did not suspend");

const refused = await runtime.resume("payments", "mallory@sales", { suspensionId: payments.suspensionId }).then(() => "resumed", (error: CivitasError) => error.code);
say(`a resume by mallory@sales: ${refused} (the worker's authorizeResume said no)`);
await runtime.resume("payments", "alice@finance", { suspensionId: payments.suspensionId });
say(`alice@finance approved suspension ${payments.suspensionId}: payments is ${(await transport.status("payments")).status}`);
const again = await runtime.resume("payments", "alice@finance", { suspensionId: payments.suspensionId }).then(() => "resumed", (error: CivitasError) => error.code);
say(`the same approval again: ${again}`);
const ledger = (await runtime.ask("payments", {}, { type: "ledger" })).payload;
say(`ledger: ${JSON.stringify(ledger.ledger)}; pending: ${JSON.stringify(ledger.pending)}`);
await runtime.stop();
say("done");
