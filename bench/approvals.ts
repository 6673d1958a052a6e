/**
 * Action-bound approvals (docs/approvals.md), measured on the wall clock in
 * one process, each figure beside its baseline, the sides alternating by
 * round (median of the rounds' means):
 *
 * 1. Round trip: `runtime.ask` of a message the policy holds (one stage,
 *    one approver), the `approval.changed` of its pending request, then
 *    `runtime.approvals.approve(id, "ana")`, until the asker has the
 *    handler's reply: request (stored) → vote (stored, decided) → release
 *    (stored consumed) → handled. Baseline: a plain `runtime.suspend` +
 *    `runtime.resume` pair of an idle agent (two stored writes). Both on
 *    the InMemoryStateStore, no audit sink.
 * 2. The suspend + resume pair against one `runtime.ask` to an echo agent,
 *    for scale.
 * 3. The gate's cost when the policy allows: sequential asks to an echo
 *    agent of a runtime whose `approvalPolicy` answers allow (a constant
 *    object), against the same asks on a runtime without a policy; and
 *    ping-pong messages/s with and without the allow policy. The instruction
 *    counts of the same paths are the `policy` and `askpolicy` workloads of
 *    `npm run bench -- check`, the figures that guard the +5 % target.
 */
import type { ApprovalPolicy, ApprovalRule, ApprovalView, Message } from "../src/index.js";
import type { CivitasModule } from "./civitas.js";
import { pingPongRig } from "./pingpong.js";
import { alternate, settle, type Benchmark, type Row } from "./harness.js";

const ROUNDS = 7;
const WARMUP_ROUNDS = 3;
/** Round trips and pairs per round (each round trip stores three writes). */
const HELD_PER_ROUND = 1_000;
const ASKS_PER_ROUND = 5_000;
const PINGPONG_MESSAGES = 20_000;

const ALLOW = Object.freeze({ decision: "allow" } as const);
const ONE_APPROVER: ApprovalRule = Object.freeze({ stages: Object.freeze([Object.freeze({ approvers: Object.freeze(["ana"]), min: 1 })]) });
const HOLD = Object.freeze({ decision: "require_approval", reason: "bench", rule: ONE_APPROVER } as const);

/** Mean µs per call of `count` sequential calls of `call`. */
async function meanMicros(count: number, call: () => Promise<unknown>): Promise<number> {
  await settle();
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await call();
  return Number(process.hrtime.bigint() - start) / 1000 / count;
}

export const approvals: Benchmark = {
  name: "approvals",
  title: `Approvals: request → vote → handled vs suspend/resume; the allow policy's cost (${ROUNDS} rounds)`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const { AgentProcess, InMemoryStateStore, Runtime, silentLogger } = civitas;
    class Echo extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        return this.reply({ n: message.payload["n"] ?? 0 });
      }
    }
    class Idle extends AgentProcess {
      override async handle(): Promise<void> {}
    }
    const holding: ApprovalPolicy = ({ message }) => (message.type === "pay" ? HOLD : ALLOW);
    const plain = new Runtime({ root: [new Echo("echo"), new Idle("idle")], logger: silentLogger, store: new InMemoryStateStore() });
    const gated = new Runtime({ root: [new Echo("echo"), new Echo("payer")], logger: silentLogger, store: new InMemoryStateStore(), approvalPolicy: holding });
    const pingPlain = pingPongRig(civitas, PINGPONG_MESSAGES);
    const pingGated = pingPongRig(civitas, PINGPONG_MESSAGES, { approvalPolicy: () => ALLOW });
    let announced: ((id: string) => void) | undefined;
    gated.on("approval.changed", (view: ApprovalView) => {
      if (view.status === "pending") announced?.(view.approvalId);
    });
    const heldRoundTrip = async (): Promise<void> => {
      const requested = new Promise<string>((resolve) => (announced = resolve));
      const asking = gated.ask("payer", { n: 1 }, { type: "pay" });
      await gated.approvals.approve(await requested, "ana");
      await asking;
    };
    const pair = async (): Promise<void> => {
      await plain.suspend("idle");
      await plain.resume("idle", "approver");
    };
    const askPlain = (): Promise<Message> => plain.ask("echo", { n: 1 });
    const askGated = (): Promise<Message> => gated.ask("echo", { n: 1 });
    await Promise.all([plain.start(), gated.start(), pingPlain.runtime.start(), pingGated.runtime.start()]);
    try {
      const held = await alternate(ROUNDS, WARMUP_ROUNDS, {
        roundTrip: () => meanMicros(HELD_PER_ROUND, heldRoundTrip),
        pair: () => meanMicros(HELD_PER_ROUND, pair),
        ask: () => meanMicros(ASKS_PER_ROUND, askPlain),
      });
      const gate = await alternate(ROUNDS, WARMUP_ROUNDS, {
        askPlain: () => meanMicros(ASKS_PER_ROUND, askPlain),
        askGated: () => meanMicros(ASKS_PER_ROUND, askGated),
        pingPlain: pingPlain.round,
        pingGated: pingGated.round,
      });
      return [
        {
          bench: "approvals",
          metric: "request → vote → handled",
          unit: "us",
          runtime: held.roundTrip,
          baseline: held.pair,
          note: "held ask, approval.changed, approve by the one approver, reply; baseline: a suspend + resume pair (InMemoryStateStore, no audit sink)",
        },
        { bench: "approvals", metric: "  suspend + resume pair", unit: "us", runtime: held.pair, baseline: held.ask, note: "baseline: one ask to an echo agent" },
        { bench: "approvals", metric: "ask, allow policy", unit: "us", runtime: gate.askGated, baseline: gate.askPlain, target: { kind: "ratio<=", value: 1.05 }, note: "baseline: the same ask, no policy" },
        { bench: "approvals", metric: "ping-pong, allow policy", unit: "msg/s", runtime: gate.pingGated, baseline: gate.pingPlain, target: { kind: "ratio>=", value: 0.95 }, note: "baseline: the same ping-pong, no policy" },
      ];
    } finally {
      await Promise.all([plain.stop(), gated.stop(), pingPlain.runtime.stop(), pingGated.runtime.stop()]);
    }
  },
};
