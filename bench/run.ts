/**
 * `npm run bench` runs every benchmark; `npm run bench -- pingpong ask` runs
 * the named ones; `--source` measures `src/` as tsx transpiles it instead of
 * as TypeScript emits it (see civitas.ts). Prints a table of civitas figures
 * beside baselines measured in the same process, their ratio and the target.
 * Never fails on speed. `npm run bench -- check` is the exception: it
 * counts instructions per unit of work under callgrind and fails past the
 * committed baseline's tolerance (callgrind-check.ts); `npm run bench --
 * profile <workload>` shows where one workload's instructions go
 * (callgrind-profile.ts).
 */
import { availableParallelism, loadavg } from "node:os";
import { approvals } from "./approvals.js";
import { ask } from "./ask.js";
import { audit } from "./audit.js";
import { callgrind } from "./callgrind-check.js";
import { profile } from "./callgrind-profile.js";
import { loadCivitas } from "./civitas.js";
import { fanin } from "./fanin.js";
import { hasGc, printTable, type Benchmark, type Row } from "./harness.js";
import { mailbox } from "./mailbox.js";
import { memory } from "./memory.js";
import { nats } from "./nats.js";
import { pingpong } from "./pingpong.js";
import { restoreAudited } from "./restore-audited.js";
import { postgres } from "./postgres.js";
import { simulation } from "./simulation.js";
import { spawn } from "./spawn.js";
import { suspend } from "./suspend.js";

const ALL: readonly Benchmark[] = [mailbox, pingpong, fanin, ask, memory, suspend, approvals, audit, spawn, restoreAudited, postgres, nats, simulation];

function usage(problem: string): never {
  console.error(`${problem}\nusage: npm run bench -- [--source] [${ALL.map((bench) => bench.name).join("|")} ...]\n       npm run bench -- check|callgrind [--write-baseline] [workload ...]\n       npm run bench -- profile <workload> [--top N]`);
  process.exit(2);
}

function parse(args: readonly string[]): { chosen: Benchmark[]; fromSource: boolean } {
  let fromSource = false;
  const names: string[] = [];
  for (const arg of args) {
    if (arg === "--") continue;
    if (arg === "--source") fromSource = true;
    else if (arg.startsWith("-")) usage(`unknown option: ${arg}`);
    else if (ALL.some((bench) => bench.name === arg)) names.push(arg);
    else usage(`unknown benchmark: ${arg}`);
  }
  return { chosen: names.length === 0 ? [...ALL] : ALL.filter((bench) => names.includes(bench.name)), fromSource };
}

function seconds(since: bigint): string {
  return `${(Number(process.hrtime.bigint() - since) / 1e9).toFixed(1)} s`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((arg) => arg !== "--");
  if (args[0] === "check" || args[0] === "callgrind") {
    process.exitCode = (await callgrind(args.slice(1), args[0] === "check")) ? 0 : 1;
    return;
  }
  if (args[0] === "profile") {
    await profile(args.slice(1));
    return;
  }
  const started = process.hrtime.bigint();
  const { chosen, fromSource } = parse(process.argv.slice(2));
  const { civitas, mode } = await loadCivitas(fromSource);
  const cpus = availableParallelism();
  const load = loadavg()[0] ?? 0;
  console.log(`civitas-ts benchmarks: node ${process.version} ${process.platform}/${process.arch}, ${cpus} CPUs, load average ${load.toFixed(2)}`);
  console.log(`code under test: ${mode}`);
  if (load > cpus) console.log(`warning: the machine is busy (load ${load.toFixed(1)} > ${cpus} CPUs); wall-clock figures will be noisy`);
  if (!hasGc()) console.log("warning: global.gc is not exposed (run with node --expose-gc); results are noisier");
  const rows: Row[] = [];
  for (const bench of chosen) {
    const t0 = process.hrtime.bigint();
    process.stdout.write(`  ${bench.name.padEnd(9)} ${bench.title} ... `);
    rows.push(...(await bench.run(civitas)));
    console.log(seconds(t0));
  }
  console.log("");
  printTable(rows);
  console.log("");
  console.log("ratio = civitas / baseline (median of alternating rounds after a warm-up; ask: percentiles over all calls).");
  console.log("Targets: ping-pong, fan-in and asks/s >= 0.50x of baseline; ask latency <= 2.00x; heap <= 1200 B per idle agent.");
  if (chosen.includes(suspend)) {
    console.log("suspend: pair <= 5 us (Erlang sys:suspend+sys:resume: 2.9 us here); ping-pong after a cycle >= 0.95x of before; flag check < 2% of a message; <= 1 wake-up per flood.");
  }
  if (chosen.includes(approvals)) {
    console.log("approvals: the allow policy costs at most +5 % per ask and per ping-pong message (issue 24; the guard is the callgrind count of workloads policy and askpolicy); the round trip has no target (figures only).");
  }
  if (chosen.includes(audit)) {
    console.log("audit: no targets (figures only); ratio = with the JsonlAuditSink / plain appendFile+fsync (rows/s), or with / without the sink (us per pair).");
  }
  if (chosen.includes(spawn)) {
    console.log("spawn: start <= 8 us per agent (nact 6.5 us, Erlang/OTP supervisor 10 us here), heap <= 1,100 B per agent, restore of 100,000 parked agents <= 1.5 s.");
  }
  if (chosen.includes(postgres)) {
    console.log("postgres: set and suspend+resume pair <= 1.30x of a raw pg upsert of the same bytes; audit rows/s: figures only (the local server on 127.0.0.1:5432, or CIVITAS_BENCH_POSTGRES).");
  }
  if (chosen.includes(simulation)) {
    console.log("simulation: a step <= 5 us (issue 13); baselines: the same scenarios on the plain runtime.");
  }
  console.log(`total ${seconds(started)}`);
}

await main();
