/**
 * Runs `npm run demo:governance` (examples/governance/run.ts): a payment held
 * by a Presidium-shaped policy table while the agent serves balance queries,
 * SIGKILL, restore, two votes (the second by the manager after the
 * escalation), exactly one payment, a denial the sender sees, and the
 * offline verification of the signed log.
 */
import { expect, it } from "vitest";
import { runProgram } from "../support/child-process.js";

it("the governance demo: held, killed, restored, approved once, denied visibly, verified offline", { timeout: 120_000 }, async () => {
  const run = await runProgram("examples/governance/run.ts", { timeoutMs: 110_000 });
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
  const expected = [
    /\[hold\] held pay \{"to":"ACME GmbH","amountCents":2500000\} for approval [0-9a-f-]{36}: large-payment/,
    /\[hold\] while the payment waits, the agent serves a balance query: 50000\.00/,
    /\[demo\] SIGKILL to pid \d+/,
    /\[decide\] restored after SIGKILL: approval [0-9a-f-]{36} is pending/,
    /\[decide\] ana@finance approved \(1 of 2\)/,
    /\[decide\] escalated: the manager may now vote in the finance stage/,
    /\[decide\] maya@management approved: approved/,
    /\[payments\] paid 25000\.00 to ACME GmbH \(approved by ana@finance \+ maya@management\)/,
    /\[decide\] paid exactly once: 1 payment\(s\) in the ledger/,
    /\[decide\] the same approval again: STALE_APPROVAL/,
    /\[decide\] the sender of the second payment sees APPROVAL_DENIED: decider ben@finance, reason "no purchase order"/,
    /\[decide\] a payment to a sanctioned payee: APPROVAL_DENIED by the policy table/,
    /\[verify\] audit chain: intact/,
    /\[verify\] approval [0-9a-f-]{36}: verified, approved by maya@management, votes ana@finance:approve, maya@management:approve, handled true/,
    /\[verify\] approval [0-9a-f-]{36}: verified, denied by ben@finance, votes ben@finance:deny, handled false/,
  ];
  let from = 0;
  for (const pattern of expected) {
    const at = run.stdout.slice(from).search(pattern);
    expect(at, `${String(pattern)} after offset ${from} in:\n${run.stdout}`).toBeGreaterThanOrEqual(0);
    from += at;
  }
  expect(run.stdout.match(/\[payments\] paid/g)).toHaveLength(1);
});
