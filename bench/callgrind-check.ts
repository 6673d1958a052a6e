/**
 * Instruction counts per unit of work on every in-process hot path, and the
 * guard against regressions (docs/benchmarks.md, "Instruction counts"):
 *
 *   npm run bench -- callgrind [workload ...]   # counts, beside the committed baseline
 *   npm run bench -- check [workload ...]       # the same; exits 1 past the tolerance
 *   npm run bench -- callgrind --write-baseline # records the counts as the new baseline
 *
 * Runs bench/callgrind.ts under `valgrind --tool=callgrind`, once per
 * workload, which dumps its counts at each of the rig's marks, and divides
 * the counted segment by its units, leaving out what V8's compilers and
 * garbage collector ran in it (callgrind_annotate's inclusive cost of their
 * entry points): when a function gets hot and how V8 sizes its heap move
 * those parts from run to run; the rest repeats to within ~1 %.
 * Instruction counts do not depend on the machine's load the way
 * wall-clock time does, so the check can be strict: a workload fails when
 * it runs more than TOLERANCE above its baseline.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RIGS } from "./callgrind-rigs.js";

/** How far above its baseline a workload's count may be before `check` fails (counts outside the compilers and the GC repeat to within ~1.5 % run to run). */
const TOLERANCE = 0.05;
/** What {@link countOne} counts; a baseline recording something else is refused. */
const COUNTED = "instructions outside V8 compilers and garbage collector, each workload in a process of its own";
const execFileAsync = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const BASELINE = join(HERE, "callgrind-baseline.json");

interface Count {
  readonly name: string;
  readonly unit: string;
  readonly units: number;
  /** Instructions per unit outside V8's compilers and garbage collector: the figure checked. */
  readonly perUnit: number;
  /** Instructions per unit inside V8's compilers, left out of the check (a function getting hot later or sooner moves it). */
  readonly jitPerUnit: number;
  /** Instructions per unit inside garbage collections, reported beside: V8 sizes its heap from measured wall-clock speeds, so this part moves by ±15 % between runs. */
  readonly gcPerUnit: number;
}

interface Baseline {
  readonly node: string;
  readonly date: string;
  readonly tolerance: number;
  /** What a count holds, so that a baseline counted another way is not compared as if it were the same. */
  readonly counted: string;
  readonly workloads: Readonly<Record<string, { readonly unit: string; readonly instructions: number }>>;
}

/** The `totals:` line of one callgrind dump. */
function totalOf(file: string): number {
  const line = readFileSync(file, "utf8").split("\n").find((l) => l.startsWith("totals:") || l.startsWith("summary:"));
  if (line === undefined) throw new Error(`${file} has no totals line`);
  return Number(line.split(/\s+/)[1]);
}

/**
 * V8's entry points into its compilers (TurboFan, OSR, Sparkplug, lazy
 * bytecode): under `--predictable` they run on the main thread, inside
 * whatever segment a function happens to get hot in.
 */
const COMPILER_ENTRIES = ["Runtime_CompileOptimized", "Runtime_CompileOptimizedOSR", "Runtime_CompileLazy", "Runtime_CompileBaseline", "Runtime_InstallBaselineCode"];
/** V8's one entry into a garbage collection. */
const GC_ENTRY = "v8::internal::Heap::CollectGarbage(";

/** A counted segment: every instruction, and the parts of it V8's compilers and garbage collector ran. */
interface Segment {
  readonly total: number;
  readonly jit: number;
  readonly gc: number;
}

/** Splits one dump with callgrind_annotate's inclusive costs. */
function segmentOf(file: string): Segment {
  const out = execFileSync("callgrind_annotate", ["--inclusive=yes", "--threshold=100", file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  let jit = 0;
  let gc = 0;
  for (const line of out.split("\n")) {
    const found = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+[^:]*:(.*)$/.exec(line);
    if (found === null) continue;
    const fn = found[2] as string;
    const cost = Number((found[1] as string).replaceAll(",", ""));
    if (COMPILER_ENTRIES.some((entry) => fn.startsWith(`v8::internal::${entry}(`))) jit += cost;
    else if (fn.startsWith(GC_ENTRY)) gc += cost;
  }
  return { total: totalOf(file), jit, gc };
}

/** Runs one workload's rig under callgrind, in a process of its own, and returns its instructions per unit. */
async function countOne(name: string): Promise<Count> {
  const dir = mkdtempSync(join(tmpdir(), "civitas-callgrind-"));
  try {
    const { stdout } = await execFileAsync(
      "valgrind",
      ["--tool=callgrind", "--dump-before=getppid", `--callgrind-out-file=${join(dir, "cg.%p")}`, process.execPath, "--predictable", "--import", "tsx", join(HERE, "callgrind.ts"), name],
      { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    const workload = stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { name: string; unit: string; units: number })[0];
    if (workload === undefined) throw new Error(`the ${name} rig printed no result`);
    // Dump k holds what ran between the (k-1)th and the kth call of getppid. tsx calls it a few times as it
    // starts, so the rig's two marks are the last two: the last dump holds exactly the counted units.
    let last = 0;
    for (const file of readdirSync(dir)) last = Math.max(last, Number(/^cg\.\d+\.(\d+)$/.exec(file)?.[1] ?? 0));
    if (last < 2) throw new Error(`expected at least two callgrind dumps (the rig's marks) for ${name}, found ${last}`);
    const file = readdirSync(dir).find((f) => f.endsWith(`.${last}`)) as string;
    const segment = segmentOf(join(dir, file));
    return { ...workload, perUnit: (segment.total - segment.jit - segment.gc) / workload.units, jitPerUnit: segment.jit / workload.units, gcPerUnit: segment.gc / workload.units };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Counts each workload in a process of its own (what one rig leaves in V8's
 * type feedback would otherwise change the next one's code), two at a time:
 * instruction counts do not depend on how busy the machine is.
 */
export async function countInstructions(names: readonly string[]): Promise<Count[]> {
  const queue = names.length === 0 ? RIGS.map((rig) => rig.name) : [...names];
  const counts = new Map<string, Count>();
  const worker = async (): Promise<void> => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) counts.set(name, await countOne(name));
  };
  await Promise.all([worker(), worker()]);
  return (names.length === 0 ? RIGS.map((rig) => rig.name) : names).map((name) => counts.get(name) as Count);
}

/**
 * Counts again, in fresh processes, the workloads past the tolerance, and
 * keeps the lower of each pair: a function V8 optimizes only inside the
 * counted segment (ask with a policy: 3,600 instructions per ask of
 * TurboFan work in one run of three) ran that segment partly unoptimized,
 * which only ever adds instructions; a real regression is counted twice.
 */
async function recountOutliers(counts: Count[], baseline: Baseline | undefined): Promise<Count[]> {
  const over = counts.filter((c) => {
    const base = baseline?.workloads[c.name]?.instructions;
    return base !== undefined && c.perUnit / base - 1 > TOLERANCE;
  });
  if (over.length === 0) return counts;
  console.log(`  counting again, in fresh processes: ${over.map((c) => c.name).join(", ")}`);
  const again = await countInstructions(over.map((c) => c.name));
  return counts.map((c) => {
    const second = again.find((a) => a.name === c.name);
    return second !== undefined && second.perUnit < c.perUnit ? second : c;
  });
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
export async function callgrind(args: readonly string[], strict: boolean): Promise<boolean> {
  const write = args.includes("--write-baseline");
  const names = args.filter((a) => !a.startsWith("-"));
  const unknown = names.filter((name) => !RIGS.some((rig) => rig.name === name));
  if (unknown.length > 0) throw new Error(`unknown workload: ${unknown.join(", ")}; known: ${RIGS.map((rig) => rig.name).join(", ")}`);
  const started = process.hrtime.bigint();
  console.log(`callgrind: counting instructions per unit (${names.length === 0 ? "every workload" : names.join(", ")}); this takes a few minutes`);
  const recorded = readBaseline();
  if (recorded !== undefined && recorded.counted !== COUNTED) console.log(`warning: the baseline counts "${recorded.counted ?? "every instruction"}", not "${COUNTED}": it is ignored; record a new one (--write-baseline)`);
  const baseline = recorded?.counted === COUNTED ? recorded : undefined;
  const counts = await recountOutliers(await countInstructions(names), baseline);
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
    const parts = `(left out: GC ${Math.round(c.gcPerUnit).toLocaleString("en")}, JIT ${Math.round(c.jitPerUnit).toLocaleString("en")})`;
    console.log(`  ${c.name.padEnd(9)} ${Math.round(c.perUnit).toLocaleString("en").padStart(9)} instructions per ${c.unit.padEnd(22)} ${parts.padEnd(30)} baseline ${base === undefined ? "-" : Math.round(base).toLocaleString("en")} ${delta} ${verdict}`);
  }
  console.log(`callgrind took ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(0)} s`);
  if (write) {
    const workloads = { ...(baseline?.workloads ?? {}) };
    for (const c of counts) workloads[c.name] = { unit: c.unit, instructions: Math.round(c.perUnit) };
    const next: Baseline = { node: process.version, date: new Date().toISOString().slice(0, 10), tolerance: TOLERANCE, counted: COUNTED, workloads };
    writeFileSync(BASELINE, `${JSON.stringify(next, null, 2)}\n`);
    console.log(`wrote ${BASELINE}`);
  }
  if (strict && !ok) console.log(`check failed: a workload runs more than ${TOLERANCE * 100}% more instructions than bench/callgrind-baseline.json records`);
  return ok || !strict;
}
