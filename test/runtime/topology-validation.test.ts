/**
 * Runtime.fromTopology refuses every malformed topology or argument with
 * TOPOLOGY_INVALID or a CivitasError, never a raw error.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { CivitasError, Runtime } from "civitas-ts";
import { caught } from "../support/outcome.js";

// ---------------------------------------------------------------- topology
describe("Runtime.fromTopology input checks", () => {
  it("a missing options argument is refused with a CivitasError, not a raw TypeError", () => {
    const error = caught(() => (Runtime.fromTopology as unknown as (t: string) => Runtime)("agent: { name: a, type: Echo }"));
    expect(error).toBeInstanceOf(CivitasError);
  });
});
