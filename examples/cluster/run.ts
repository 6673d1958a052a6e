// `npm run demo:cluster`: a payments worker in one process and an approval
// service in another, on the NATS server at NATS_URL (default 127.0.0.1:4222).
// The service lists the worker's suspended agents and resumes one.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

function start(file: string): { child: ChildProcess; exited: Promise<number | null>; ready: Promise<void> } {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, file)], { stdio: ["ignore", "pipe", "inherit"] });
  let markReady = (): void => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    process.stdout.write(chunk);
    if (chunk.includes("ready")) markReady();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, exited, ready };
}

const worker = start("worker.ts");
await worker.ready;
const service = start("approval-service.ts");
const serviceCode = await service.exited;
worker.child.kill("SIGTERM");
const workerCode = await worker.exited;
console.log(`approval service exited with code ${serviceCode}, worker with code ${workerCode}`);
process.exitCode = serviceCode === 0 && workerCode === 0 ? 0 : 1;
