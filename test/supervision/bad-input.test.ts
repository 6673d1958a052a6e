/**
 * Bad supervision input is refused and touches nothing: duplicate names, a
 * strategy with no value, unknown names.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/supervision-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { DynamicSupervisor, ProcessStatus, Runtime, Supervisor, silentLogger } from "civitas-ts";
import { TestClock } from "civitas-ts/testing";
import { Probe, harness, stopAll } from "../support/agents.js";

afterEach(stopAll);

describe("bad supervision input", () => {
  it("a Runtime refused for a duplicate name leaves the agents usable in a corrected runtime", () => {
    const a = new Probe("a");
    const b = new Probe("b");
    const dup = new Probe("a");
    expect(() => new Runtime({ root: [a, b, dup], logger: silentLogger, clock: new TestClock() })).toThrow(expect.objectContaining({ code: "DUPLICATE_NAME" }) as Error);
    // nothing should have happened to a and b: they can still form a runtime
    expect(() => new Runtime({ root: [a, b], logger: silentLogger, clock: new TestClock() })).not.toThrow();
  });

  it("a topology whose strategy has no value (YAML null) is refused, not silently ONE_FOR_ONE", () => {
    const yaml = ["supervisor:", "  name: root", "  strategy:", "  maxRestarts:", "  children: []", ""].join("\n");
    expect(() => Runtime.fromTopology(yaml, { agents: {}, logger: silentLogger })).toThrow(expect.objectContaining({ code: "TOPOLOGY_INVALID" }) as Error);
    expect(() => new Supervisor("s", { children: [], strategy: null as unknown as "ONE_FOR_ONE" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }) as Error);
  });

  it("despawn and stop of an unknown name reject with AGENT_NOT_FOUND and touch nothing", async () => {
    const dyn = new DynamicSupervisor("dyn");
    const fixed = new Probe("fixed");
    const { runtime } = harness(new Supervisor("root", { children: [fixed, dyn] }));
    await runtime.start();
    const w = await dyn.spawn(Probe, "w");
    await expect(dyn.despawn("nope")).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    await expect(dyn.stop("fixed", { drain: "all" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    expect(fixed.status).toBe(ProcessStatus.RUNNING);
    expect(w.status).toBe(ProcessStatus.RUNNING);
    expect(dyn.children).toEqual([w]);
  });
});
