/**
 * The ping-pong rig for counting instructions (docs/benchmarks.md, "How"):
 * loads `src/` as the build emits it, runs `warmup` rounds (default 20) of
 * the ping-pong benchmark's 40,000 messages, then `rounds` more. Run it
 * twice under callgrind with two round counts; the difference of the two
 * totals, divided by the difference in messages, is the instructions per
 * message, free of start-up, compilation and warm-up:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --predictable --import tsx bench/callgrind.ts 10
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --predictable --import tsx bench/callgrind.ts 40
 *
 * With `CIVITAS_BENCH_POLICY=allow` the runtime has an approval policy that
 * allows every message (one constant answer): the gate's cost on the path.
 *
 * A short warm-up, or a small difference in rounds, measures the JIT and the
 * garbage collector's timing as much as the code: with 5 warm-up rounds the
 * same build gave 2,360 and 3,720 instructions per message over two ranges.
 */
import { loadCivitas } from "./civitas.js";
import { pingPongRig } from "./pingpong.js";

const MESSAGES = 40_000;
const rounds = Number(process.argv[2] ?? "10");
const WARMUP_ROUNDS = Number(process.argv[3] ?? "20");
const { civitas } = await loadCivitas(false);
const ALLOW = Object.freeze({ decision: "allow" } as const);
const { runtime, round } = pingPongRig(civitas, MESSAGES, process.env.CIVITAS_BENCH_POLICY === "allow" ? { approvalPolicy: () => ALLOW } : {});
await runtime.start();
for (let i = 0; i < WARMUP_ROUNDS + rounds; i++) await round();
await runtime.stop();
console.log(`${rounds} rounds of ${MESSAGES} messages after ${WARMUP_ROUNDS} warm-up rounds`);
