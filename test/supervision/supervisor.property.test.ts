import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, RESTART_STRATEGIES, RestartIntensityError, Supervisor } from "../../src/index.js";
import { Probe, harness, probes, stopAll, turns, waitUntil } from "../support/agents.js";
import { restartSet } from "../support/restart-set.js";

afterEach(stopAll);


/** The model of restart intensity: a sliding window of the restarts done so far. */
class SlidingWindow {
  private readonly restarts: number[] = [];
  constructor(
    private readonly maxRestarts: number,
    private readonly windowMs: number,
  ) {}
  /** Whether a crash at `now` is restarted (true) or escalated (false). */
  crash(now: number): boolean {
    const recent = this.restarts.filter((t) => t > now - this.windowMs).length;
    if (recent + 1 > this.maxRestarts) return false;
    this.restarts.push(now);
    return true;
  }
}

describe("Supervisor restart set (property)", () => {
  it("restarts exactly the children the strategy names, for any tree size, crash sequence and strategy", async () => {
    const scenario = fc.integer({ min: 1, max: 6 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        strategy: fc.constantFrom(...RESTART_STRATEGIES),
        crashes: fc.array(fc.nat({ max: n - 1 }), { minLength: 1, maxLength: 4 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(scenario, async ({ n, strategy, crashes }) => {
        const kids = probes(n);
        const root = new Supervisor("root", { children: kids, strategy, maxRestarts: 1000, backoffBaseMs: 0 });
        const { runtime } = harness(root);
        await runtime.start();
        const model = Array<number>(n).fill(1);
        for (const crashed of crashes) {
          for (const i of restartSet(strategy, n, crashed)) model[i]!++;
          await runtime.send(kids[crashed]!.name, { op: "crash" });
          await waitUntil(
            () => kids.every((k, i) => k.incarnation === model[i] && k.status === ProcessStatus.RUNNING),
            `incarnations ${JSON.stringify(model)} (have ${JSON.stringify(kids.map((k) => k.incarnation))})`,
          );
        }
        await turns(5);
        expect(kids.map((k) => k.incarnation)).toEqual(model);
        expect(kids.map((k) => k.startCalls)).toEqual(model);
        expect(kids.map((k) => k.status)).toEqual(Array(n).fill(ProcessStatus.RUNNING));
        expect(root.restartCount).toBe(model.reduce((sum, m) => sum + m - 1, 0));
        await runtime.stop();
      }),
      { numRuns: 60 },
    );
  });
});

describe("Supervisor restart intensity (property)", () => {
  it("allows at most maxRestarts restarts within restartWindowMs, then escalates, for random crash times", async () => {
    const scenario = fc.record({
      maxRestarts: fc.integer({ min: 0, max: 4 }),
      windowMs: fc.integer({ min: 1, max: 1000 }),
      gaps: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1500 })), { minLength: 1, maxLength: 12 }),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ maxRestarts, windowMs, gaps }) => {
        const child = new Probe("c");
        const root = new Supervisor("root", { children: [child], maxRestarts, restartWindowMs: windowMs, backoffBaseMs: 0 });
        const { runtime, clock, audit } = harness(root);
        const escalations: Error[] = [];
        runtime.on("escalated", (error) => escalations.push(error));
        await runtime.start();
        const model = new SlidingWindow(maxRestarts, windowMs);
        let restarts = 0;
        let modelEscalated = false;
        for (const gap of gaps) {
          await clock.advance(gap);
          const restarted = model.crash(clock.now());
          await runtime.send("c", { op: "crash" });
          if (restarted) {
            restarts++;
            await waitUntil(() => child.incarnation === restarts + 1 && child.status === ProcessStatus.RUNNING, `restart ${restarts}`);
            expect(escalations).toEqual([]);
          } else {
            modelEscalated = true;
            await waitUntil(() => escalations.length > 0 && root.status === ProcessStatus.STOPPED, "the escalation");
            break;
          }
        }
        await turns(5);
        expect(root.restartCount).toBe(restarts);
        expect(child.incarnation).toBe(restarts + 1);
        expect(audit.ofType("agent.restart", "c")).toHaveLength(restarts);
        expect(escalations.length).toBe(modelEscalated ? 1 : 0);
        if (modelEscalated) {
          expect(escalations[0]).toBeInstanceOf(RestartIntensityError);
          expect((escalations[0] as RestartIntensityError).code).toBe("RESTART_INTENSITY");
          expect((escalations[0] as RestartIntensityError).supervisor).toBe("root");
          expect(child.status).not.toBe(ProcessStatus.RUNNING);
          expect(audit.ofType("supervisor.escalate", "root")).toHaveLength(1);
        } else {
          expect(child.status).toBe(ProcessStatus.RUNNING);
          await runtime.stop();
        }
      }),
      { numRuns: 80 },
    );
  });
});

describe("one live loop per agent (property)", () => {
  it("no two handle() calls of one agent overlap and every message is handled exactly once, in order, under repeated crashes", async () => {
    const action = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant("work" as const), agent: fc.nat({ max: 2 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const), agent: fc.nat({ max: 2 }) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...RESTART_STRATEGIES), fc.array(action, { minLength: 1, maxLength: 30 }), async (strategy, script) => {
        const kids = probes(3);
        const root = new Supervisor("root", { children: kids, strategy, maxRestarts: 1000, backoffBaseMs: 0 });
        const { runtime } = harness(root);
        await runtime.start();
        const sent: number[][] = [[], [], []];
        for (const [seq, step] of script.entries()) {
          if (step.kind === "work") {
            sent[step.agent]!.push(seq);
            await runtime.send(kids[step.agent]!.name, { op: "work", seq });
          } else {
            await runtime.send(kids[step.agent]!.name, { op: "crash" });
          }
          if (seq % 3 === 0) await turns(1);
        }
        await waitUntil(
          () => kids.every((k, i) => k.handled.length >= sent[i]!.length && k.status === ProcessStatus.RUNNING && k.mailbox.size === 0),
          "every work message to be handled",
        );
        await turns(5);
        for (const [i, kid] of kids.entries()) {
          expect(kid.overlaps, kid.name).toBe(0);
          expect(kid.handled, kid.name).toEqual(sent[i]);
        }
        await runtime.stop();
      }),
      { numRuns: 40 },
    );
  });
});
