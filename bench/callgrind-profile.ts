/**
 * Where one hot path's instructions go, function by function:
 *
 *   npm run bench -- profile pingpong [--top 40]
 *
 * Runs the workload's rig (callgrind-rigs.ts) under `valgrind
 * --tool=callgrind` as the guard does (callgrind-check.ts), with V8's code
 * map on (`--perf-basic-prof`, written to /tmp/perf-<pid>.map): callgrind
 * names code V8 generated only by its address, and the map turns those
 * into the JavaScript functions (`JS:*loop …` is optimized code, `^` baseline,
 * `~` bytecode) and builtins they are. Prints the functions with the most
 * *self* instructions per unit in the counted segment: inlined callees count
 * in their caller, and the compilers' and collector's work of the segment is
 * listed with the rest (the guard leaves it out). The profile varies with V8's
 * inlining decisions more than the total does: compare totals with
 * `npm run bench -- callgrind`, and read this for where to look.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { RIGS } from "./callgrind-rigs.js";

const execFileAsync = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");

/** One entry of V8's code map: where a piece of generated code starts, how long it is, what it is, and its line in the map. */
interface CodeRange {
  readonly start: bigint;
  readonly end: bigint;
  readonly name: string;
  readonly line: number;
}

/** The code map's entries sorted by start, and the longest of them (how far back a lookup has to look). */
interface CodeMap {
  readonly ranges: readonly CodeRange[];
  readonly longest: bigint;
}

function readCodeMap(file: string): CodeMap {
  const ranges: CodeRange[] = [];
  let longest = 0n;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const found = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/i.exec(line);
    if (found === null) continue;
    const start = BigInt(`0x${found[1] as string}`);
    const size = BigInt(`0x${found[2] as string}`);
    if (size > longest) longest = size;
    ranges.push({ start, end: start + size, name: found[3] as string, line: ranges.length });
  }
  ranges.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.line - b.line));
  return { ranges, longest };
}

/**
 * The code map's name for `name` when it is a bare address callgrind could
 * not name, else `name`. V8 reuses the memory of code it collected, so an
 * address can lie in several entries: the one written last names it (the
 * code that ran there last, which is what the counted segment, the run's
 * last, ran).
 */
function named(name: string, map: CodeMap): string {
  if (!/^0x[0-9a-f]+$/i.test(name)) return name;
  const address = BigInt(name);
  const ranges = map.ranges;
  // The last entry starting at or before the address, then back over every entry that could still reach it.
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if ((ranges[mid] as CodeRange).start <= address) low = mid + 1;
    else high = mid - 1;
  }
  let latest: CodeRange | undefined;
  for (let i = high; i >= 0; i--) {
    const range = ranges[i] as CodeRange;
    if (address - range.start >= map.longest) break;
    if (address < range.end && (latest === undefined || range.line > latest.line)) latest = range;
  }
  return latest?.name ?? "(generated code not in the map)";
}

/** What {@link readCosts} reads from a dump: self cost per function, and the cost of calls into the functions asked about, per caller. */
interface Costs {
  readonly self: Map<string, number>;
  readonly callers: Map<string, number>;
}

/**
 * Self cost per function of one callgrind dump: every cost line counts for
 * the function it is under, except the line right after a `calls=` line,
 * which is the inclusive cost of that call (its callee's, not its own).
 * That inclusive cost is also counted per caller (`caller -> callee`) when
 * the callee's name contains `callee`.
 */
function readCosts(file: string, map: CodeMap, callee: string | undefined): Costs {
  const names = new Map<string, string>();
  const resolveName = (spec: string): string => {
    const found = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (found === null) return named(spec, map);
    const [, id, given] = found as unknown as [string, string, string | undefined];
    if (given !== undefined) names.set(id, named(given, map));
    return names.get(id) ?? `(function ${id})`;
  };
  const self = new Map<string, number>();
  const callers = new Map<string, number>();
  let current = "(none)";
  let called = "(none)";
  let callCost = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("fn=")) {
      current = resolveName(line.slice(3));
      callCost = false;
    } else if (line.startsWith("cfn=")) {
      called = resolveName(line.slice(4)); // also names it, for later fn= lines that use the id alone
    } else if (line.startsWith("calls=")) {
      callCost = true;
    } else if (/^[\d+\-*]/.test(line)) {
      const cost = Number(line.split(/\s+/)[1] ?? 0);
      if (callCost) {
        callCost = false;
        if (callee !== undefined && called.includes(callee)) {
          const key = `${shortName(current)} -> ${shortName(called)}`;
          callers.set(key, (callers.get(key) ?? 0) + cost);
        }
        continue;
      }
      self.set(current, (self.get(current) ?? 0) + cost);
    }
  }
  return { self, callers };
}

/** Shortens a code-map name: the temporary folder the build was emitted to, and C++ parameter lists. */
function shortName(name: string): string {
  const short = name
    .replace(/file:\/\/\/\S*?\/(src|dist|bench)\//, "$1/")
    .replaceAll("(anonymous namespace)::", "")
    .replace(/\(.*$/, "()");
  return short.length > 100 ? `${short.slice(0, 97)}...` : short;
}

/** Runs `npm run bench -- profile <workload> [--top N] [--callers NAME]`. */
export async function profile(args: readonly string[]): Promise<void> {
  const topAt = args.indexOf("--top");
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 40;
  const callersAt = args.indexOf("--callers");
  const callee = callersAt >= 0 ? args[callersAt + 1] : undefined;
  const names = args.filter((arg, i) => !arg.startsWith("-") && (topAt < 0 || i !== topAt + 1) && (callersAt < 0 || i !== callersAt + 1));
  const name = names[0];
  if (names.length !== 1 || name === undefined || !RIGS.some((rig) => rig.name === name) || !Number.isInteger(top) || top < 1 || (callersAt >= 0 && !callee)) {
    throw new Error(`usage: npm run bench -- profile <workload> [--top N] [--callers NAME]; workloads: ${RIGS.map((rig) => rig.name).join(", ")}`);
  }
  const dir = mkdtempSync(join(tmpdir(), "civitas-profile-"));
  try {
    console.log(`profile: ${name} under callgrind with V8's code map; this takes a minute or two`);
    const { stdout } = await execFileAsync(
      "valgrind",
      ["--tool=callgrind", "--dump-before=getppid", `--callgrind-out-file=${join(dir, "cg.%p")}`, process.execPath, "--predictable", "--perf-basic-prof", "--import", "tsx", join(HERE, "callgrind.ts"), name],
      { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    const workload = stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { unit: string; units: number })[0];
    if (workload === undefined) throw new Error(`the ${name} rig printed no result`);
    // As in callgrind-check.ts: the dump with the highest number holds exactly the counted units.
    const dumps = readdirSync(dir).map((file) => /^cg\.(\d+)\.(\d+)$/.exec(file)).filter((found) => found !== null);
    const last = dumps.reduce((a, b) => (Number(b[2]) > Number(a[2]) ? b : a), dumps[0] as RegExpExecArray);
    if (last === undefined) throw new Error(`callgrind wrote no dump for ${name}`);
    const codeMap = `/tmp/perf-${last[1] as string}.map`;
    try {
      const { self: costs, callers } = readCosts(join(dir, last[0]), readCodeMap(codeMap), callee);
      const total = [...costs.values()].reduce((a, b) => a + b, 0);
      console.log(`  ${Math.round(total / workload.units).toLocaleString("en")} instructions per ${workload.unit}, all of them (the guard leaves out the compilers' and the collector's part); self instructions per ${workload.unit}:`);
      for (const [fn, cost] of [...costs].sort((a, b) => b[1] - a[1]).slice(0, top)) {
        console.log(`  ${(cost / workload.units).toFixed(1).padStart(9)} ${((100 * cost) / total).toFixed(1).padStart(5)} %  ${shortName(fn)}`);
      }
      if (callee !== undefined) {
        console.log(`  calls into functions named *${callee}*, instructions per ${workload.unit} including their callees:`);
        for (const [edge, cost] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, top)) {
          console.log(`  ${(cost / workload.units).toFixed(1).padStart(9)}  ${edge}`);
        }
      }
    } finally {
      rmSync(codeMap, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
