/**
 * Instruction counts per unit of work on every in-process hot path, and the
 * guard against regressions (docs/benchmarks.md, "Instruction counts"):
 *
 *   npm run bench -- callgrind [workload ...]   # counts, beside the committed baseline
 *   npm run bench -- check [workload ...]       # the same; exits 1 past the tolerance
 *   npm run bench -- callgrind --write-baseline # records the counts as the new baseline
 *
 * Runs bench/callgrind.ts once under `valgrind --tool=callgrind`, which
 * dumps its counts at each of the rig's marks, and divides the counted
 * segment of each workload by its units. Instruction counts do not depend
 * on the machine's load the way wall-clock time does, so the check can be
 * strict: a workload fails when it runs more than TOLERANCE above its
 * baseline.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** How far above its baseline a workload's count may be before `check` fails (counts repeat to within ~1-2 % run to run). */
const TOLERANCE = 0.05;
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const BASELINE = join(HERE, "callgrind-baseline.json");

interface Count {
  readonly name: string;
  readonly unit: string;
  readonly units: number;
  readonly perUnit: number;
}

interface Baseline {
  readonly node: string;
  readonly date: string;
  readonly tolerance: number;
  readonly workloads: Readonly<Record<string, { readonly unit: string; readonly instructions: number }>>;
}

/** The `totals:` line of one callgrind dump. */
function totalOf(file: string): number {
  const line = readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("totals:") || l.startsWith("summary:"));
  if (line === undefined) throw new Error(`${file} has no totals line`);
  return Number(line.split(/\s+/)[1]);
}

/** Runs the rig under callgrind and returns the instructions per unit of each workload. */
export function countInstructions(names: readonly string[]): Count[] {
  const dir = mkdtempSync(join(tmpdir(), "civitas-callgrind-"));
  try {
    const out = execFileSync(
      "valgrind",
      ["--tool=callgrind", "--dump-before=getppid", `--callgrind-out-file=${join(dir, "cg.%p")}`, process.execPath, "--predictable", "--import", "tsx", join(HERE, "callgrind.ts"), ...names],
      { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 },
    );
    const workloads = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { name: string; unit: string; units: number });
    // Dump k holds what ran between the (k-1)th and the kth call of getppid. tsx calls it a few times as it
    // starts, so the rig's marks are the last two per workload: the counted units of workload i end at the
    // (2i+2)th of those.
    const dumps: number[] = [];
    for (const file of readdirSync(dir)) {
      const k = /^cg\.\d+\.(\d+)$/.exec(file)?.[1];
      if (k !== undefined) dumps[Number(k)] = totalOf(join(dir, file));
    }
    const first = dumps.length - workloads.length * 2;
    if (first < 1 || Object.keys(dumps).length !== dumps.length - 1) throw new Error(`expected at least ${workloads.length * 2} callgrind dumps (two marks per workload), found ${dumps.length - 1}`);
    return workloads.map((w, i) => ({ ...w, perUnit: (dumps[first + 2 * i + 1] as number) / w.units }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function readBaseline(): Baseline | undefined {
  try {
    return JSON.parse(readFileSync(BASELINE, "utf8")) as Baseline;
  } catch {
    return undefined;
  }
}

/**
 * Prints each workload's count beside the baseline's; returns whether every
 * one is within the tolerance (a workload the baseline lacks passes).
 */
export function callgrind(args: readonly string[], strict: boolean): boolean {
  const write = args.includes("--write-baseline");
  const names = args.filter((a) => !a.startsWith("-"));
  const started = process.hrtime.bigint();
  console.log(`callgrind: counting instructions per unit (${names.length === 0 ? "every workload" : names.join(", ")}); this takes a few minutes`);
  const counts = countInstructions(names);
  const baseline = readBaseline();
  if (baseline !== undefined && baseline.node !== process.version) {
    console.log(`warning: the baseline was counted on node ${baseline.node}, this is ${process.version}: counts differ between V8 versions`);
  }
  let ok = true;
  for (const c of counts) {
    const base = baseline?.workloads[c.name]?.instructions;
    const change = base === undefined ? undefined : c.perUnit / base - 1;
    const verdict =
      change === undefined ? "no baseline" : change > TOLERANCE ? `REGRESSION (> +${TOLERANCE * 100}%)` : change < -TOLERANCE ? "ok, below the baseline: record it (--write-baseline)" : "ok";
    if (change !== undefined && change > TOLERANCE) ok = false;
    const delta = change === undefined ? "" : `${change >= 0 ? "+" : ""}${(change * 100).toFixed(1)}%`;
    console.log(`  ${c.name.padEnd(9)} ${Math.round(c.perUnit).toLocaleString("en").padStart(9)} instructions per ${c.unit.padEnd(22)} baseline ${base === undefined ? "-" : Math.round(base).toLocaleString("en")} ${delta} ${verdict}`);
  }
  console.log(`callgrind took ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(0)} s`);
  if (write) {
    const workloads = { ...(baseline?.workloads ?? {}) };
    for (const c of counts) workloads[c.name] = { unit: c.unit, instructions: Math.round(c.perUnit) };
    const next: Baseline = { node: process.version, date: new Date().toISOString().slice(0, 10), tolerance: TOLERANCE, workloads };
    writeFileSync(BASELINE, `${JSON.stringify(next, null, 2)}\n`);
    console.log(`wrote ${BASELINE}`);
  }
  if (strict && !ok) console.log(`check failed: a workload runs more than ${TOLERANCE * 100}% more instructions than bench/callgrind-baseline.json records`);
  return ok || !strict;
}
