/**
 * Runs `npm run demo:cluster` (examples/cluster/run.ts) against a NATS server
 * of its own (NATS_URL; the shared one on 4222 carries other test files'
 * agents at the same time, and a second "payments" there would answer for
 * this one): a payments worker and an approval service in
 * two processes; the service finds the worker's suspended agent with
 * listSuspended({ scope: "cluster" }) on the PostgreSQL store they share, and resumes it;
 * then it votes on a wire transfer the worker holds, and the worker's rule decides.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ownNatsServer, type OwnNatsServer } from "../nats/support/nats-server.js";
import { runProgram } from "../support/child-process.js";

let nats: OwnNatsServer;

beforeAll(async () => {
  nats = await ownNatsServer();
  await nats.start();
});

afterAll(async () => {
  await nats.stop();
});

it("the cluster demo: the approval service resumes the worker's suspended agent and approves its held wire transfer across processes", { timeout: 40_000 }, async () => {
  const run = await runProgram("examples/cluster/run.ts", { timeoutMs: 30_000, env: { ...process.env, NATS_URL: nats.url } });
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
  const expected = [
    /\[worker\] ready \(pid \d+\): payments is on the bus/,
    /\[worker\] paid INV-1 40\.00 \(within policy\)/,
    /\[approvals\] suspended in the cluster: payments, reason "approve INV-2: 12500\.00", suspensionId [0-9a-f-]{36}/,
    /\[approvals\] a resume by mallory@sales: RESUME_REFUSED/,
    /\[worker\] onResume\(alice@finance\): paid INV-2 12500\.00/,
    /\[approvals\] alice@finance approved suspension [0-9a-f-]{36}: payments is RUNNING/,
    /\[approvals\] the same approval again: STALE_APPROVAL/,
    /\[approvals\] suspended in the cluster now: 0 agents/,
    /\[approvals\] ledger: \[\{"invoice":"INV-1","amount":40\},\{"invoice":"INV-2","amount":12500\}\]; pending: null/,
    /\[approvals\] held in the cluster: payments wire \{"invoice":"INV-3","amount":30000\}, approvalId [0-9a-f-]{36}/,
    /\[approvals\] a vote by mallory@sales: APPROVER_NOT_ALLOWED/,
    /\[approvals\] alice@finance voted: pending, 1 of 2/,
    /\[approvals\] bob@finance voted: approved/,
    /\[worker\] wired INV-3 30000\.00, approved by alice@finance and bob@finance/,
    /\[approvals\] the wire's reply: \{"wired":"INV-3"\}/,
    /\[worker\] stopped; pause receipts: agent\.suspend, agent\.resume/,
    /\[worker\] approval receipts: approval\.requested, approval\.voted, approval\.voted, approval\.voted, approval\.decided, approval\.consumed/,
    /approval service exited with code 0, worker with code 0/,
  ];
  for (const pattern of expected) expect(run.stdout).toMatch(pattern);
});
