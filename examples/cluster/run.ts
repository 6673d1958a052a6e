// `npm run demo:cluster`: a payments worker in one process and an approval
// service in another, on the NATS server at NATS_URL (default 127.0.0.1:4222).
// The service lists the worker's suspended agents from the PostgreSQL store
// they share (CIVITAS_POSTGRES_URL, default the local server's database
// "test"; a schema of its own, dropped at the end) and resumes one.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const here = path.dirname(fileURLToPath(import.meta.url));
const url = process.env.CIVITAS_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `civitas_demo_${randomBytes(4).toString("hex")}`;
const env = { ...process.env, CIVITAS_POSTGRES_URL: url, CIVITAS_STATE_TABLE: `${schema}.civitas_state` };

function start(file: string): { child: ChildProcess; exited: Promise<number | null>; ready: Promise<void> } {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, file)], { stdio: ["ignore", "pipe", "inherit"], env });
  let markReady = (): void => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    process.stdout.write(chunk);
    if (chunk.includes("ready")) markReady();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, exited, ready };
}

const pool = new pg.Pool({ connectionString: url, max: 1 });
await pool.query(`CREATE SCHEMA "${schema}"`);
let serviceCode: number | null = null;
let workerCode: number | null = null;
try {
  const worker = start("worker.ts");
  await Promise.race([worker.ready, worker.exited]);
  const service = start("approval-service.ts");
  serviceCode = await service.exited;
  worker.child.kill("SIGTERM");
  workerCode = await worker.exited;
} finally {
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
}
console.log(`approval service exited with code ${serviceCode}, worker with code ${workerCode}`);
process.exitCode = serviceCode === 0 && workerCode === 0 ? 0 : 1;
