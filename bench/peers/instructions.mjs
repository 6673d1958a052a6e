// Instructions per unit of work of one peer of ../shared/bench-peers, counted by callgrind: a
// figure that does not move with the machine's day (wall clock on this VM does, by 20 % and more),
// to compare civitas-ts with the minimal runtime (minimal.mjs) instruction for instruction.
//
//   node instructions.mjs <peer> <w1|w2|w3> [small] [large]      (run in the bench-peers folder)
//
// Runs the peer's workload under `valgrind --tool=callgrind` twice, at two sizes (W1_TOTAL,
// W2_PER or W3_N of `small` and `large`, 100,000 and 300,000 by default; both with the harness's
// 20 % warm-up), and prints the difference per unit of work: the start-up, module loading and
// set-up cancel out, what is left is the work of the extra units. As `npm run bench -- check`
// does, Node runs with `--predictable` (the collector and the compilers on the main thread) and
// their part is told apart with callgrind_annotate's inclusive costs: the figure is what runs
// outside them (it repeats within a few per cent; the collector's part moves with when a
// collection happens to fall). The two runs go side by side (instruction counts do not depend on
// the load). W2 is impractically slow under valgrind (its 1,000 blocked senders); W1 and W3 take
// about a minute each.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SIZE_KEY = { w1: 'W1_TOTAL', w2: 'W2_PER', w3: 'W3_N' };
const UNIT = { w1: 'message', w2: 'message', w3: 'ask' };
const WARMUP = 0.2;

const [peer, workload, smallArg = '100000', largeArg = '300000'] = process.argv.slice(2);
const small = Number(smallArg);
const large = Number(largeArg);
if (!peer || !(workload in SIZE_KEY) || !Number.isInteger(small) || !Number.isInteger(large) || small <= 0 || large <= small) {
  console.error('usage: node instructions.mjs <peer> <w1|w2|w3> [small] [large]   (sizes: whole numbers, small < large)');
  process.exit(64);
}

/** Units of work one run at `size` does, its warm-up included (W2: every sender sends `size`; 1,000 senders, 200 in the warm-up). */
function units(size) {
  const senders = Number(process.env.W2_SENDERS ?? 1000);
  return workload === 'w2' ? (senders + Math.max(1, Math.round(senders * WARMUP))) * size : (1 + WARMUP) * size;
}

/** V8's entries into its compilers and its collector, as bench/callgrind-check.ts names them. */
const COMPILER_ENTRIES = ['Runtime_CompileOptimized', 'Runtime_CompileOptimizedOSR', 'Runtime_CompileLazy', 'Runtime_CompileBaseline', 'Runtime_InstallBaselineCode'].map((entry) => `v8::internal::${entry}(`);
const GC_ENTRY = 'v8::internal::Heap::CollectGarbage(';

/** One run of the workload at `size`: every instruction, and the compilers' and the collector's part of them. */
async function instructions(dir, size) {
  const out = join(dir, `callgrind.${size}`);
  const env = { ...process.env, [SIZE_KEY[workload]]: String(size), WARMUP: String(WARMUP) };
  const node = [process.execPath, '--predictable', '--expose-gc', 'harness.mjs', `./${peer}.mjs`, workload];
  await run('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, ...node], { env, maxBuffer: 1 << 24 });
  const summary = /^summary: (\d+)$/m.exec(readFileSync(out, 'utf8'));
  if (summary === null) throw new Error(`callgrind wrote no summary for ${peer} ${workload} at ${size}`);
  const { stdout } = await run('callgrind_annotate', ['--inclusive=yes', '--threshold=100', out], { maxBuffer: 1 << 28 });
  let jit = 0;
  let gc = 0;
  for (const line of stdout.split('\n')) {
    const found = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+[^:]*:(.*)$/.exec(line);
    if (found === null) continue;
    const cost = Number(found[1].replaceAll(',', ''));
    if (COMPILER_ENTRIES.some((entry) => found[2].startsWith(entry))) jit += cost;
    else if (found[2].startsWith(GC_ENTRY)) gc += cost;
  }
  return { total: Number(summary[1]), jit, gc };
}

const dir = mkdtempSync(join(tmpdir(), 'peer-instructions-'));
try {
  const [a, b] = await Promise.all([instructions(dir, small), instructions(dir, large)]);
  const n = units(large) - units(small);
  const per = (count) => Math.round(count / n).toLocaleString('en');
  const outside = (r) => r.total - r.jit - r.gc;
  console.log(`${peer} ${workload}: ${per(outside(b) - outside(a))} instructions per ${UNIT[workload]} outside V8's compilers and collector (collector ${per(b.gc - a.gc)}, compilers ${per(b.jit - a.jit)})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
