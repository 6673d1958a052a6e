/**
 * Runtime.fromTopology refuses every malformed topology or argument with
 * TOPOLOGY_INVALID or a CivitasError, never a raw error.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it, vi } from "vitest";
import { CivitasError, Runtime } from "civitas-ts";
import { caught } from "../support/outcome.js";
import { AgentProcess, TopologyError, silentLogger, type AgentProcessOptions } from "../../src/index.js";

// ---------------------------------------------------------------- topology
describe("Runtime.fromTopology input checks", () => {
  it("a missing options argument is refused with a CivitasError, not a raw TypeError", () => {
    const error = caught(() => (Runtime.fromTopology as unknown as (t: string) => Runtime)("agent: { name: a, type: Echo }"));
    expect(error).toBeInstanceOf(CivitasError);
  });
});

class Worker extends AgentProcess {}

/** A class that is not an AgentProcess, as a registry typo could hold (e.g. a service class). */
class NotAnAgent {
  constructor(readonly name: string, readonly options?: AgentProcessOptions) {}
}

/** Expects a TopologyError (TOPOLOGY_INVALID) and returns it. */
function topologyError(fn: () => unknown): TopologyError {
  const error = caught(fn);
  expect(error, "expected a TopologyError").toBeInstanceOf(TopologyError);
  expect((error as TopologyError).code).toBe("TOPOLOGY_INVALID");
  return error as TopologyError;
}

describe("Runtime.fromTopology: mistakes that must be TOPOLOGY_INVALID", () => {
  it("an agent named 'root' at the top (wrapped in a supervisor named root) is refused with TOPOLOGY_INVALID at its name, not DUPLICATE_NAME", () => {
    const error = topologyError(() => Runtime.fromTopology({ agent: { name: "root", type: "Worker" } }, { agents: { Worker }, logger: silentLogger }));
    expect(error.path).toBe("topology.agent.name");
  });

  it.each([
    ["at the top", { agent: { name: "a", type: "NotAnAgent" } }, "topology.agent"],
    ["under a supervisor", { supervisor: { name: "s", children: [{ agent: { name: "a", type: "NotAnAgent" } }] } }, "topology.supervisor.children[0].agent"],
  ])("a registry class that is not an AgentProcess subclass (%s) is refused with TOPOLOGY_INVALID naming the agent entry", (_where, topology, at) => {
    const error = topologyError(() =>
      Runtime.fromTopology(topology, { agents: { NotAnAgent } as unknown as { NotAnAgent: typeof Worker }, logger: silentLogger }),
    );
    expect([`${at}.type`, "options.agents.NotAnAgent"]).toContain(error.path);
  });

  it("a YAML tag the topology format does not know is refused, and nothing is written to stderr behind the logger's back", () => {
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    // built or not, nothing is started: nothing to stop
    const error = caught(() => Runtime.fromTopology("agent: { name: a, type: !Agent Worker }", { agents: { Worker }, logger: silentLogger, keepAlive: false }));
    expect(warn).not.toHaveBeenCalled();
    expect(error).toBeInstanceOf(TopologyError);
  });

  it("a deeply nested topology object is refused with a CivitasError, not a raw RangeError", () => {
    let node: object = { agent: { name: "leaf", type: "Worker" } };
    for (let i = 0; i < 3000; i++) node = { supervisor: { name: `s${i}`, children: [node] } };
    const error = caught(() => Runtime.fromTopology(node, { agents: { Worker }, logger: silentLogger, keepAlive: false }));
    expect(error).toBeInstanceOf(CivitasError);
  });

  it("a hole in an object-form children list is reported at that child, not at the whole list", () => {
    const children = [, { agent: { name: "a", type: "Worker" } }];
    const error = topologyError(() => Runtime.fromTopology({ supervisor: { name: "s", children } }, { agents: { Worker }, logger: silentLogger }));
    expect(error.path).toBe("topology.supervisor.children[0]");
  });
});
