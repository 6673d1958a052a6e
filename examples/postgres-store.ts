/**
 * Two processes' runtimes sharing one PostgreSQL database: state, a lease,
 * fencing and one audit chain (docs/postgres.md).
 *
 *   1. Owner A holds the lease on group "payments" and runs the payer agent
 *      with a store fenced at A's lease fence. The payer pauses for approval.
 *   2. A stops renewing (a long GC pause, a network partition). Once the lease
 *      has expired by the database's clock, owner B acquires it with a newer
 *      fence, claims the payer's row, and starts its own payer: it comes back
 *      SUSPENDED under the same suspensionId. bob approves it on B.
 *   3. A wakes up and writes: STATE_FENCED. Its payer stops at once
 *      (agent.fenced) and never overwrites B's state.
 *   4. The one audit chain both wrote verifies, and the suspension is
 *      verified against the store's truncation anchor.
 *
 * Run it with `npx tsx examples/postgres-store.ts` against a local server
 * (CIVITAS_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test).
 * It works in a schema of its own and drops it at the end.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { AgentProcess, ProcessStatus, Runtime, silentLogger, type JsonObject, type Message } from "civitas-ts";
import { verifyAuditLog, verifySuspension } from "civitas-ts/audit";
import { PostgresAuditSink, PostgresLeases, PostgresStateStore } from "civitas-ts/postgres";

const URL = process.env.CIVITAS_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const KEY = "example-audit-key";
const TTL_MS = 1500;

class Payer extends AgentProcess<JsonObject> {
  override state: JsonObject = { paid: [] };
  override async handle(message: Message): Promise<void> {
    const invoice = String(message.payload.invoice);
    this.state.pending = invoice;
    await this.checkpoint();
    this.suspend(`approve ${invoice}`);
  }
  override async onResume(approver: string): Promise<void> {
    (this.state.paid as string[]).push(`${String(this.state.pending)} by ${approver}`);
    delete this.state.pending;
    await this.checkpoint();
  }
}

const pool = new pg.Pool({ connectionString: URL, max: 6 });
const schema = `civitas_example_${randomBytes(4).toString("hex")}`;
await pool.query(`CREATE SCHEMA "${schema}"`);
try {
  const store = new PostgresStateStore({ pool }, { table: `${schema}.civitas_state` });
  const leases = new PostgresLeases({ pool }, { table: `${schema}.civitas_leases` });
  const audit = new PostgresAuditSink({ pool, key: KEY, table: `${schema}.civitas_audit` });

  // 1. Owner A.
  const fenceA = await leases.acquire("payments", "owner-a", TTL_MS);
  if (fenceA === null) throw new Error("owner A did not get the lease");
  await store.claim(["payer"], fenceA);
  console.log(`[A] holds the lease on payments with fence ${fenceA}`);
  const payerA = new Payer("payer");
  const runtimeA = new Runtime({ root: [payerA], store: store.fenced(fenceA), auditSink: audit, logger: silentLogger, keepAlive: false });
  await runtimeA.start();
  await runtimeA.send("payer", { invoice: "INV-7" });
  while ((await store.listSuspended()).length === 0) await sleep(10); // SUSPENDED in memory first, then persisted
  const suspensionId = String((payerA.suspension ?? { suspensionId: "?" }).suspensionId);
  console.log(`[A] payer is SUSPENDED (suspension ${suspensionId}), awaiting approval of INV-7`);
  console.log(`[A] listSuspended from the marker column: ${(await store.listSuspended()).map((s) => `${s.name} "${s.marker.reason}"`).join(", ")}`);

  // 2. A stops renewing; B waits for the database to expire the lease.
  console.log(`[B] acquire while A holds it: ${String(await leases.acquire("payments", "owner-b", TTL_MS))}`);
  let fenceB: number | null = null;
  while (fenceB === null) {
    await sleep(200);
    fenceB = await leases.acquire("payments", "owner-b", TTL_MS);
  }
  console.log(`[A] still holds payments by the local rule: ${String(leases.holds("owner-a", "payments"))}`);
  await store.claim(["payer"], fenceB);
  console.log(`[B] took over payments with fence ${fenceB} after the lease expired by the database's clock`);
  const payerB = new Payer("payer");
  const runtimeB = new Runtime({ root: [payerB], store: store.fenced(fenceB), auditSink: audit, logger: silentLogger, keepAlive: false });
  await runtimeB.start();
  console.log(`[B] payer restored ${payerB.status} under the same suspension: ${String(payerB.suspension?.suspensionId === suspensionId)}`);
  await runtimeB.resume("payer", "bob@finance", { suspensionId });
  console.log(`[B] bob@finance approved; stored state: ${JSON.stringify((await store.get("payer"))?.paid)}`);

  // 3. A wakes up and writes (it updates the reason of the pause it still believes it holds).
  await runtimeA.suspend("payer", "approve INV-7 (reminder)");
  let fenced;
  while (fenced === undefined) fenced = (await audit.rows()).find((r) => r.event === "agent.fenced");
  while (payerA.status !== ProcessStatus.STOPPED) await sleep(10);
  console.log(`[A] payer ${payerA.status} after its write was refused: ${fenced?.event ?? "?"} (fence ${String(fenced?.details.fence)} < ${String(fenced?.details.currentFence)})`);
  console.log(`[B] state untouched by A: ${JSON.stringify((await store.get("payer"))?.paid)}`);

  // 4. One audit chain for both owners.
  await runtimeA.stop();
  await runtimeB.stop();
  const rows = await audit.rows();
  const chain = await verifyAuditLog(rows, { key: KEY });
  console.log(`verifyAuditLog: ${chain.ok ? "intact" : "BROKEN"}, ${chain.rows} rows from both owners in one chain`);
  const verdict = await verifySuspension(rows, "payer", { key: KEY, store });
  console.log(`verifySuspension(payer, with the store's anchor): ${verdict.status}`);
  await audit.close();
  await leases.close();
  await store.close();
} finally {
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
}
console.log("done");
