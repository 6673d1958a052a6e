/**
 * A resume always names someone: approvers that are empty, invisible or that
 * display as someone else are refused with INVALID_APPROVER.
 *
 * Each test pins a defect found by the review of durable suspension (SPEC §5,
 * §11) (these tests were in test/review/suspension-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { SUSPENSION_KEY } from "../../../src/index.js";
import { refusedApprover, teardown } from "./helpers.js";

afterEach(teardown);

describe("approver validation", () => {
  it("an approver made only of U+0085 (NEXT LINE, Unicode White_Space) is refused with INVALID_APPROVER", async () => {
    const { agent, ...r } = await refusedApprover("\u0085");
    expect(agent.resumes).toEqual([]);
    expect(Object.hasOwn((await r.store.get("a")) ?? {}, SUSPENSION_KEY)).toBe(true);
  });
});

describe("approver validation (S6: a resume always names someone)", () => {
  it.each([
    ["NUL", "\u0000"],
    ["BEL", "\u0007"],
    ["HANGUL FILLER", "\u3164"],
    ["BRAILLE PATTERN BLANK", "\u2800"],
  ])("an approver made only of %s (nothing visible) is refused with INVALID_APPROVER and the agent stays SUSPENDED", async (_name, approver) => {
    const { agent } = await refusedApprover(approver);
    expect(agent.resumes).toEqual([]);
  });
});

describe("approvers that display as someone else", () => {
  it.each([
    ["RIGHT-TO-LEFT OVERRIDE", "\u202Eecila"],
    ["RIGHT-TO-LEFT ISOLATE", "bob\u2067ecila"],
  ])("an approver with a %s (shows as another name) is refused with INVALID_APPROVER", async (_name, approver) => {
    await refusedApprover(approver);
  });
});
