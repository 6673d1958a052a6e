/**
 * The process `npm run bench -- callgrind` and `-- check` run under
 * valgrind's callgrind (see callgrind-check.ts and docs/benchmarks.md,
 * "Instruction counts"): loads `src/` as the build emits it and, for each
 * named workload of callgrind-rigs.ts (all by default), builds it, runs its
 * warm-up, then its counted units between two marks. A mark reads
 * `process.ppid`, the one call of `getppid()` in the process, and callgrind,
 * told `--dump-before=getppid`, writes its counts at each mark: the second
 * dump of each pair holds exactly the counted units. Prints one JSON line
 * per workload (name, unit, counted units), in mark order.
 *
 *   valgrind --tool=callgrind --dump-before=getppid --callgrind-out-file=/tmp/cg.%p \
 *     node --predictable --import tsx bench/callgrind.ts ask spawn
 */
import { loadCivitas } from "./civitas.js";
import { RIGS } from "./callgrind-rigs.js";

/** Makes callgrind dump its counts here (see the file's comment). */
function mark(): void {
  if (process.ppid < 0) throw new Error("unreachable: a parent pid is never negative");
}

function roundUp(units: number, batch: number): number {
  return Math.ceil(units / batch) * batch;
}

const names = process.argv.slice(2);
const unknown = names.filter((name) => !RIGS.some((rig) => rig.name === name));
if (unknown.length > 0) {
  console.error(`unknown workload: ${unknown.join(", ")}; known: ${RIGS.map((rig) => rig.name).join(", ")}`);
  process.exit(2);
}
const { civitas } = await loadCivitas(false);
for (const plan of RIGS) {
  if (names.length > 0 && !names.includes(plan.name)) continue;
  const rig = await plan.build(civitas);
  await rig.run(roundUp(plan.warmup, rig.batch));
  const counted = roundUp(plan.counted, rig.batch);
  mark();
  await rig.run(counted);
  mark();
  await rig.close();
  console.log(JSON.stringify({ name: plan.name, unit: plan.unit, units: counted }));
}
