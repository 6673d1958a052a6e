/**
 * The lifecycle phases (src/process/lifecycle.ts): the phase table, and
 * `ProcessRunner.enter`, the one writer of the phase and of the status,
 * which refuses any change either table does not allow and never leaves a
 * status its phase does not allow.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, isLegalTransition, ProcessStatus } from "../../src/index.js";
import { IDLE, isLegalPhase, PHASES, UP, newStartAttempt, type Phase } from "../../src/process/lifecycle.js";
import { resolveAgentOptions } from "../../src/process/agent-options.js";
import { ProcessRunner } from "../../src/process/process-runner.js";

const KINDS = ["idle", "starting", "up", "stopping", "down"] as const;
const STATUSES = Object.values(ProcessStatus);

/** A phase of `kind` with made-up data (enter checks kinds, never data). */
function phaseOf(kind: Phase["kind"]): Phase {
  switch (kind) {
    case "idle":
      return IDLE;
    case "up":
      return UP;
    case "starting":
      return { kind, attempt: newStartAttempt() };
    case "stopping":
      return { kind, exit: { kind: "normal", reason: "stopped" }, plan: undefined, done: Promise.resolve(), crashRecorded: undefined, unfinished: undefined };
    case "down":
      return { kind, exit: { kind: "normal", reason: "stopped" }, unfinished: undefined };
  }
}

describe("the phase table", () => {
  it("names the statuses each phase shows and the phases it may change to", () => {
    const table = Object.fromEntries(KINDS.map((kind) => [kind, { statuses: [...PHASES[kind].statuses], next: [...PHASES[kind].next] }]));
    expect(table).toEqual({
      idle: { statuses: ["INITIALIZING"], next: ["starting"] },
      starting: { statuses: ["INITIALIZING", "RUNNING", "SUSPENDED"], next: ["starting", "up", "stopping"] },
      up: { statuses: ["RUNNING", "SUSPENDED"], next: ["up", "stopping"] },
      stopping: { statuses: ["STOPPING", "STOPPED", "CRASHED"], next: ["stopping", "down"] },
      down: { statuses: ["STOPPED", "CRASHED"], next: ["starting"] },
    });
  });

  it("cannot be changed at run time", () => {
    expect(Object.isFrozen(PHASES)).toBe(true);
    for (const kind of KINDS) {
      expect(Object.isFrozen(PHASES[kind])).toBe(true);
      expect(Object.isFrozen(PHASES[kind].statuses)).toBe(true);
      expect(Object.isFrozen(PHASES[kind].next)).toBe(true);
    }
    expect(Object.isFrozen(IDLE) && Object.isFrozen(UP)).toBe(true);
  });
});

describe("ProcessRunner.enter, the one writer of phase and status", () => {
  it("takes exactly the changes both tables allow, and the status always fits the phase", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...KINDS), fc.constantFrom(...STATUSES), fc.boolean()), { maxLength: 40 }), (steps) => {
        const runner = new ProcessRunner(new AgentProcess("a"), resolveAgentOptions({}));
        for (const [kind, status, samePhase] of steps) {
          const before = { phase: runner.phase, status: runner.currentStatus };
          const next = samePhase ? runner.phase : phaseOf(kind);
          const legalStatus = status === before.status ? next !== before.phase : isLegalTransition(before.status, status);
          const legal = legalStatus && isLegalPhase(before.phase, next, status);
          let refused: unknown;
          try {
            runner.enter(next, status);
          } catch (error) {
            refused = error;
          }
          if (legal) {
            expect(refused).toBeUndefined();
            expect(runner.phase).toBe(next);
            expect(runner.currentStatus).toBe(status);
          } else {
            expect(refused).toMatchObject({ code: "ILLEGAL_TRANSITION" });
            expect(runner.phase).toBe(before.phase);
            expect(runner.currentStatus).toBe(before.status);
          }
          expect(PHASES[runner.phase.kind].statuses).toContain(runner.currentStatus);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("goes through a whole incarnation: idle, starting, up, stopping, down, and a restart", () => {
    const runner = new ProcessRunner(new AgentProcess("a"), resolveAgentOptions({}));
    const seen: string[] = [];
    const go = (phase: Phase, status: ProcessStatus): void => {
      runner.enter(phase, status);
      seen.push(`${runner.phase.kind}:${runner.currentStatus}`);
    };
    go(phaseOf("starting"), ProcessStatus.INITIALIZING);
    runner.transition(ProcessStatus.RUNNING);
    go(UP, ProcessStatus.RUNNING);
    runner.transition(ProcessStatus.SUSPENDED);
    go(phaseOf("stopping"), ProcessStatus.STOPPING);
    runner.transition(ProcessStatus.STOPPED);
    go(phaseOf("down"), ProcessStatus.STOPPED);
    go(phaseOf("starting"), ProcessStatus.INITIALIZING);
    expect(seen).toEqual(["starting:INITIALIZING", "up:RUNNING", "stopping:STOPPING", "down:STOPPED", "starting:INITIALIZING"]);
    expect(() => runner.enter(UP, ProcessStatus.INITIALIZING)).toThrow(expect.objectContaining({ code: "ILLEGAL_TRANSITION" }));
    expect(() => runner.transition(ProcessStatus.INITIALIZING)).toThrow(expect.objectContaining({ code: "ILLEGAL_TRANSITION" }));
  });
});
