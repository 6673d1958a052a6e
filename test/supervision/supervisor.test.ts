import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, StartFailedError, Supervisor, type RestartStrategy, type Runtime } from "../../src/index.js";
import { Probe, gate, harness, probes, stopAll, turns, waitUntil } from "../support/agents.js";

afterEach(stopAll);

function restartSetOf(strategy: RestartStrategy, n: number, crashed: number): number[] {
  if (strategy === "ONE_FOR_ONE") return [crashed];
  const from = strategy === "ONE_FOR_ALL" ? 0 : crashed;
  return Array.from({ length: n - from }, (_, i) => from + i);
}

/** Four probes, p0 to p3, under a root of `strategy` (no backoff), started, with their journal emptied of the starts. */
async function fourProbes(strategy: RestartStrategy): Promise<{ journal: string[]; kids: Probe[]; runtime: Runtime }> {
  const journal: string[] = [];
  const kids = probes(4, "p", journal);
  const { runtime } = harness(new Supervisor("root", { children: kids, strategy, backoffBaseMs: 0 }));
  await runtime.start();
  journal.length = 0;
  return { journal, kids, runtime };
}

describe("Supervisor start and stop order", () => {
  it("starts children depth-first in order and stops them in reverse order", async () => {
    const journal: string[] = [];
    const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((name) => new Probe(name, {}, journal)) as [Probe, Probe, Probe, Probe, Probe];
    const inner = new Supervisor("inner", { children: [c, d] });
    const root = new Supervisor("root", { children: [a, b, inner, e] });
    const { runtime } = harness(root);

    await runtime.start();
    expect(journal).toEqual(["start:a", "start:b", "start:c", "start:d", "start:e"]);
    expect(root.status).toBe(ProcessStatus.RUNNING);
    expect(inner.status).toBe(ProcessStatus.RUNNING);
    expect([a, b, c, d, e].map((p) => p.status)).toEqual(Array(5).fill(ProcessStatus.RUNNING));

    journal.length = 0;
    await runtime.stop();
    expect(journal).toEqual(["stop:e", "stop:d", "stop:c", "stop:b", "stop:a"]);
    expect([a, b, c, d, e].map((p) => p.status)).toEqual(Array(5).fill(ProcessStatus.STOPPED));
    expect(root.status).toBe(ProcessStatus.STOPPED);
    expect(inner.status).toBe(ProcessStatus.STOPPED);
  });

  it("a second stop() is a no-op that runs no onStop again", async () => {
    const journal: string[] = [];
    const kids = probes(2, "k", journal);
    const { runtime } = harness(new Supervisor("root", { children: kids }));
    await runtime.start();
    await Promise.all([runtime.stop(), runtime.stop()]);
    await runtime.stop();
    expect(journal.filter((j) => j.startsWith("stop:"))).toEqual(["stop:k1", "stop:k0"]);
  });
});

describe("Supervisor restart strategies", () => {
  const cases: Array<[RestartStrategy, number[]]> = [
    ["ONE_FOR_ONE", [1]],
    ["ONE_FOR_ALL", [0, 1, 2, 3]],
    ["REST_FOR_ONE", [1, 2, 3]],
  ];

  for (const [strategy, expected] of cases) {
    it(`${strategy}: a crash of child 1 of 4 restarts exactly children ${expected.join(",")}`, async () => {
      expect(restartSetOf(strategy, 4, 1)).toEqual(expected);
      const kids = probes(4);
      const root = new Supervisor("root", { children: kids, strategy, backoffBaseMs: 0 });
      const { runtime } = harness(root);
      await runtime.start();

      await runtime.send("p1", { op: "crash" });
      await waitUntil(() => expected.every((i) => kids[i]!.incarnation === 2 && kids[i]!.status === ProcessStatus.RUNNING), "the restart set to run again");
      await turns(20);

      for (const [i, kid] of kids.entries()) {
        const inSet = expected.includes(i);
        expect(kid.incarnation, kid.name).toBe(inSet ? 2 : 1);
        expect(kid.startCalls, kid.name).toBe(inSet ? 2 : 1);
        expect(kid.stopCalls, kid.name).toBe(inSet ? 1 : 0);
        expect(kid.status, kid.name).toBe(ProcessStatus.RUNNING);
      }
      expect(root.restartCount).toBe(expected.length);
      // every child, restarted or not, still answers; the untouched ones from their first incarnation
      for (const [i, kid] of kids.entries()) {
        const reply = await runtime.ask(kid.name, { op: "echo" });
        expect(reply.payload).toEqual({ from: kid.name, incarnation: expected.includes(i) ? 2 : 1 });
      }
    });
  }

  it("ONE_FOR_ALL stops the siblings in reverse order, then restarts all in order", async () => {
    const { journal, kids, runtime } = await fourProbes("ONE_FOR_ALL");
    await runtime.send("p1", { op: "crash" });
    await waitUntil(() => kids.every((k) => k.incarnation === 2 && k.status === ProcessStatus.RUNNING), "all children to restart");
    expect(journal).toEqual(["stop:p1", "stop:p3", "stop:p2", "stop:p0", "start:p0", "start:p1", "start:p2", "start:p3"]);
  });

  it("REST_FOR_ONE stops the later siblings in reverse order and restarts from the crashed child", async () => {
    const { journal, kids, runtime } = await fourProbes("REST_FOR_ONE");
    await runtime.send("p2", { op: "crash" });
    await waitUntil(() => kids[2]!.incarnation === 2 && kids[3]!.incarnation === 2 && kids[3]!.status === ProcessStatus.RUNNING, "p2 and p3 to restart");
    await turns(10);
    expect(journal).toEqual(["stop:p2", "stop:p3", "start:p2", "start:p3"]);
  });

  it("a nested supervisor counts as one child: REST_FOR_ONE restarts it with its subtree", async () => {
    const journal: string[] = [];
    const [a, b, c, d] = probes(4, "n", journal) as [Probe, Probe, Probe, Probe];
    const inner = new Supervisor("inner", { children: [b, c] });
    const root = new Supervisor("root", { children: [a, inner, d], strategy: "REST_FOR_ONE", backoffBaseMs: 0 });
    const { runtime } = harness(root);
    await runtime.start();
    await runtime.send("n0", { op: "crash" });
    await waitUntil(() => [a, b, c, d].every((p) => p.incarnation === 2 && p.status === ProcessStatus.RUNNING), "the whole tree to restart");
    expect(inner.incarnation).toBe(2);
    expect(inner.status).toBe(ProcessStatus.RUNNING);
  });

  it("messages queued for a restarted sibling survive the restart and are handled once", async () => {
    const kids = probes(2);
    const { runtime } = harness(new Supervisor("root", { children: kids, strategy: "ONE_FOR_ALL", backoffBaseMs: 0 }));
    await runtime.start();
    await runtime.send("p1", { op: "hang", seq: 0 });
    await waitUntil(() => kids[1]!.hanging, "p1 to block");
    for (let seq = 1; seq <= 3; seq++) await runtime.send("p1", { op: "work", seq });
    await runtime.send("p0", { op: "crash" });
    await waitUntil(() => kids[1]!.status === ProcessStatus.STOPPING, "p1 to be asked to stop");
    kids[1]!.release();
    await waitUntil(() => kids[1]!.handled.length === 4, "p1 to handle its queue after the restart");
    expect(kids[1]!.handled).toEqual([0, 1, 2, 3]);
    expect(kids[1]!.incarnation).toBe(2);
  });
});

describe("Supervisor and normal exits", () => {
  for (const [how, send] of [
    ["onError returns ErrorAction.STOP", { payload: { op: "exit" }, type: "message" }],
    ["it receives civitas.eval.halt", { payload: {}, type: "civitas.eval.halt" }],
  ] as const) {
    it(`does not restart an agent that exits normally because ${how}`, async () => {
      const kids = probes(3);
      const root = new Supervisor("root", { children: kids, strategy: "ONE_FOR_ALL", backoffBaseMs: 100 });
      const { runtime, clock, audit } = harness(root);
      await runtime.start();
      await runtime.send("p1", send.payload, { type: send.type });
      await waitUntil(() => kids[1]!.status === ProcessStatus.STOPPED, "p1 to stop");
      await turns(10);
      await clock.advance(60_000);
      await turns(10);
      expect(kids[1]!.status).toBe(ProcessStatus.STOPPED);
      expect(kids[1]!.incarnation).toBe(1);
      expect(kids[1]!.startCalls).toBe(1);
      expect(kids[1]!.stopCalls).toBe(1);
      for (const sibling of [kids[0]!, kids[2]!]) {
        expect(sibling.status).toBe(ProcessStatus.RUNNING);
        expect(sibling.incarnation).toBe(1);
      }
      expect(root.restartCount).toBe(0);
      expect(audit.ofType("agent.restart")).toEqual([]);
      expect(audit.ofType("agent.crash")).toEqual([]);
      expect(audit.ofType("agent.stop", "p1")).toHaveLength(1);
      expect(audit.ofType("agent.stop", "p1")[0]!.details).toEqual({ reason: send.type === "message" ? "stop" : "halt" });
    });
  }

  it("an agent that exited normally is restarted with its siblings when another child crashes under ONE_FOR_ALL", async () => {
    const kids = probes(2);
    const { runtime } = harness(new Supervisor("root", { children: kids, strategy: "ONE_FOR_ALL", backoffBaseMs: 0 }));
    await runtime.start();
    await runtime.send("p1", { op: "exit" });
    await waitUntil(() => kids[1]!.status === ProcessStatus.STOPPED, "p1 to stop");
    await runtime.send("p0", { op: "crash" });
    await waitUntil(() => kids.every((k) => k.incarnation === 2 && k.status === ProcessStatus.RUNNING), "both to run again");
    expect(kids[1]!.stopCalls).toBe(1);
  });
});

describe("Supervisor restart audit", () => {
  it("emits one agent.restart event per restarted child, naming the crashed child and the cause", async () => {
    const kids = probes(3);
    const { runtime, audit } = harness(new Supervisor("root", { children: kids, strategy: "REST_FOR_ONE", backoffBaseMs: 0 }));
    await runtime.start();
    await runtime.send("p1", { op: "crash" });
    await waitUntil(() => kids[2]!.incarnation === 2 && kids[2]!.status === ProcessStatus.RUNNING, "p1 and p2 to restart");
    await turns(5);
    const restarts = audit.ofType("agent.restart");
    expect(restarts.map((e) => e.agent)).toEqual(["p1", "p2"]);
    for (const event of restarts) {
      expect(event.details).toEqual({ supervisor: "root", strategy: "REST_FOR_ONE", crashed: "p1", incarnation: 2, cause: "boom in p1" });
      expect(event.signerId).toBe("civitas-runtime");
      expect(Number.isNaN(Date.parse(event.ts))).toBe(false);
    }
    expect(audit.ofType("agent.crash").map((e) => e.agent)).toEqual(["p1"]);
    expect(audit.ofType("agent.restart", "p0")).toEqual([]);
  });
});

describe("Supervisor start failures", () => {
  it("rejects runtime.start with START_FAILED and stops the siblings already started, in reverse", async () => {
    const journal: string[] = [];
    const [a, b, c, d] = probes(4, "s", journal) as [Probe, Probe, Probe, Probe];
    c.failStarts = 1;
    const root = new Supervisor("root", { children: [a, b, c, d] });
    const { runtime } = harness(root);

    const error = await runtime.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StartFailedError);
    expect((error as StartFailedError).code).toBe("START_FAILED");
    expect((error as StartFailedError).name).toBe("StartFailedError");
    expect((error as StartFailedError).agent).toBe("s2");
    expect(((error as StartFailedError).cause as Error).message).toBe("onStart of s2 failed");
    expect(journal).toEqual(["start:s0", "start:s1", "start:s2", "stop:s2", "stop:s1", "stop:s0"]);
    expect(a.status).toBe(ProcessStatus.STOPPED);
    expect(b.status).toBe(ProcessStatus.STOPPED);
    expect(c.status).toBe(ProcessStatus.CRASHED);
    expect(d.startCalls).toBe(0);
    expect(d.status).toBe(ProcessStatus.INITIALIZING);
    await runtime.stop();
    expect(d.stopCalls).toBe(0);
  });

  it("reports the failing agent of a nested supervisor", async () => {
    const journal: string[] = [];
    const [a, b, c, d] = probes(4, "s", journal) as [Probe, Probe, Probe, Probe];
    c.failStarts = 1;
    const root = new Supervisor("root", { children: [a, new Supervisor("inner", { children: [b, c] }), d] });
    const { runtime } = harness(root);
    await expect(runtime.start()).rejects.toMatchObject({ code: "START_FAILED", agent: "s2" });
    expect(journal).toEqual(["start:s0", "start:s1", "start:s2", "stop:s2", "stop:s1", "stop:s0"]);
    expect(d.startCalls).toBe(0);
  });

  it("handles the crash of a child that happens while a later sibling is still starting", async () => {
    const [a, b] = probes(2) as [Probe, Probe];
    b.startGate = gate();
    const { runtime } = harness(new Supervisor("root", { children: [a, b], backoffBaseMs: 0 }));
    const starting = runtime.start();
    await runtime.send("p0", { op: "crash" }); // queued as the start begins: p0 crashes as soon as it runs
    await waitUntil(() => a.status === ProcessStatus.CRASHED, "p0 to crash while p1 starts");
    b.startGate.open();
    await starting;
    await waitUntil(() => a.incarnation === 2 && a.status === ProcessStatus.RUNNING, "p0 to be restarted once the start is over");
    expect(b.incarnation).toBe(1);
  });
});
