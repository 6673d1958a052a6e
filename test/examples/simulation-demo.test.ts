/**
 * Runs `npm run demo:simulation` (examples/simulation/run.ts) the way a user
 * would: the three planted bugs are found, shrunk, replayed and their fixes
 * pass; exhaust finds the peeking auditor and clears the serialized one.
 */
import { expect, it } from "vitest";
import { runProgram } from "../support/child-process.js";

it("the simulation demo finds, shrinks and replays the three planted bugs, and their fixes pass", { timeout: 90_000 }, async () => {
  const run = await runProgram("examples/simulation/run.ts", { timeoutMs: 80_000 });
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
  const expected = [
    /^== a lost update between two transfer coordinators$/m,
    /^found after \d+ run\(s\); shrunk in \d+ step\(s\) to 2 user operations: \[transfer\(coord-., \w+->\w+, \d+\) \| transfer\(coord-., \w+->\w+, \d+\)\]$/m,
    /^what went wrong: money created or lost: the accounts hold \d+, not 200$/m,
    /^replaying the saved trace: the same failure, step for step$/m,
    /^the fixed version: 300 runs passed$/m,
    /^== an auditor that sees money in flight$/m,
    /^what went wrong: the auditor raised 1 false alarm\(s\): it summed \d+ while the bank held 200$/m,
    /^== a double payment after a resume$/m,
    /^what went wrong: paid twice: INV-\d/m,
    /^the peeking auditor: fails in schedule \d+ \(the auditor raised 1 false alarm/m,
    /^the serialized auditor: all \d+ schedules pass \(complete: true\)$/m,
  ];
  let at = 0;
  for (const pattern of expected) {
    const rest = run.stdout.slice(at);
    const match = pattern.exec(rest);
    expect(match, `expected ${String(pattern)} (in order) in:\n${run.stdout}`).not.toBeNull();
    at += (match?.index ?? 0) + (match?.[0].length ?? 0);
  }
  expect(run.stdout.match(/replaying the saved trace: the same failure, step for step/g)).toHaveLength(3);
  expect(run.stdout.match(/the fixed version: 300 runs passed/g)).toHaveLength(3);
});
