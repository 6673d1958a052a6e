/**
 * Control across processes under simulation: the simulation's runtime owns
 * the agents (a real ControlServer over its TransportHost), `sim.peer` is a
 * runtime of another process requesting through the real requestControl,
 * and every packet on the simulated bus is a chosen step that can be
 * dropped, delayed (overtaken by others) or duplicated, on virtual time.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/audit-event.js";
import { randomChooser } from "../../../src/testing/simulation/random-chooser.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import type { Chooser, Simulation, SimulationOptions, SimulationStep } from "../../../src/testing/simulation/types.js";
import { alone, faultOnce, Payer } from "./fixtures.js";

const payer = (): ReturnType<typeof alone> => alone(new Payer("payer"));
const base = { root: payer, runtime: { authorizeResume: (_agent: string, approver: string) => approver !== "mallory" } } satisfies Omit<SimulationOptions, "seed">;

/** "ok", or the code a call was refused with. */
type Outcome = string;

/** Settles a peer's call into "ok" or its error code. */
function outcome(promise: Promise<unknown>): Promise<Outcome> {
  return promise.then(
    () => "ok",
    (error: unknown) => String((error as { code?: unknown }).code ?? error),
  );
}

/** The simulation of the current test, stopped after it (a failed assertion leaves none running). */
let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

/** Pays 5 and runs until the payer is SUSPENDED with the payment pending; its suspension id. */
async function pendingPayment(sim: Simulation): Promise<string> {
  await current?.stop();
  current = sim;
  await sim.start();
  void sim.send("payer", "pay", { amount: 5 });
  await sim.run();
  expect(sim.view.status("payer")).toBe("SUSPENDED");
  return sim.view.agent<Payer>("payer").suspension?.suspensionId as string;
}

/** The decisions on record for the pause `suspensionId`. */
function decisions(audit: readonly AuditEvent[], suspensionId: string): AuditEvent[] {
  return audit.filter((e) => (e.event === "agent.resume" || e.event === "agent.deny") && e.details.suspensionId === suspensionId);
}

/** The request packets for `operation` of payer that reached the owner's subject (late ones and copies included), and the requestId each carried. */
function requests(trace: readonly SimulationStep[], operation: string): { key: string; requestId: string }[] {
  return trace
    .filter((s) => s.key.startsWith(`net>ctl.payer:${operation}#`) && (s.kind === "net" || s.kind === "net.duplicate"))
    .map((s) => ({ key: s.key, requestId: /of (\S+) \(attempt/.exec(s.detail ?? "")?.[1] ?? `(${s.kind}: no detail)` }));
}

/** Asks for faults only once `enabled()` says so; otherwise `base`. */
function faultsOnlyWhen(chooser: Chooser, enabled: () => boolean): Chooser {
  return { choose: (ready, step) => chooser.choose(ready, step), fault: (choice, kind, p, step) => enabled() && (chooser.fault?.(choice, kind, p, step) ?? false) };
}

describe("control across processes on the simulated bus", () => {
  it("a resume whose first answer is dropped is sent again with the same requestId: one receipt, and the requester is told it succeeded", async () => {
    const sim = simulate({ ...base, chooser: faultOnce("net<ctl.payer:result#1", "net.drop"), faults: { network: { drop: 0.5 } } });
    const id = await pendingPayment(sim);
    const resumed = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 5_000 }));
    await sim.run();
    expect(await resumed).toBe("ok");
    expect(sim.trace.find((s) => s.key === "net<ctl.payer:result#1")?.kind).toBe("net.drop");
    const sent = requests(sim.trace, "resume");
    expect(sent.length).toBe(2);
    expect(new Set(sent.map((r) => r.requestId)).size).toBe(1);
    expect(decisions(sim.view.audit, id).map((e) => e.event)).toEqual(["agent.resume"]);
    expect(sim.view.agent<Payer>("payer").state.paid).toBe(1);
    expect(sim.view.status("payer")).toBe("RUNNING");
    await sim.stop();
  });

  it("a retry after the owner was killed between its resume and the answer gets the recorded outcome, not STALE_APPROVAL (regression)", async () => {
    // Before the fix the restarted owner had forgotten the request id, found the pause settled and refused the retry with STALE_APPROVAL.
    const sim = simulate({ ...base, chooser: faultOnce("net<ctl.payer:result#1", "kill"), faults: { kills: 0.5 } });
    const id = await pendingPayment(sim);
    const resumed = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 5_000 }));
    await sim.run();
    expect(sim.trace.find((s) => s.key === "net<ctl.payer:result#1")?.kind).toBe("kill");
    expect(await resumed).toBe("ok");
    expect(decisions(sim.view.audit, id).length).toBe(1);
    expect(sim.view.agent<Payer>("payer").state.paid).toBe(1);
    // A new call (not a retry) naming the settled pause is still refused, by the same approver or another.
    const same = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 5_000 }));
    const other = outcome(sim.peer.resume("payer", "carol", { suspensionId: id, timeoutMs: 5_000 }));
    await sim.run();
    expect(await same).toBe("STALE_APPROVAL");
    expect(await other).toBe("STALE_APPROVAL");
    await sim.stop();
  });

  it("an owner that is gone: AGENT_UNREACHABLE at the deadline in virtual time, nothing decided", async () => {
    const sim = simulate({ ...base, seed: 4 });
    const id = await pendingPayment(sim);
    const started = sim.view.now;
    let settledAt = 0;
    const down = sim.kill({ downMs: 4_000 });
    // Sent while the owner is down: nobody subscribes to its control subject ("no responders"), retried every 100 ms.
    const resumed = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 3_000 }).finally(() => (settledAt = sim.view.now)));
    await down;
    await sim.run();
    expect(await resumed).toBe("AGENT_UNREACHABLE");
    expect(settledAt - started).toBeGreaterThanOrEqual(3_000);
    expect(settledAt - started).toBeLessThan(3_200);
    expect(sim.trace.filter((s) => s.key.startsWith("net>ctl.payer:resume#")).every((s) => s.detail?.endsWith("no responders"))).toBe(true);
    expect(decisions(sim.view.audit, id)).toEqual([]);
    expect(sim.view.status("payer")).toBe("SUSPENDED");
    // Back up: the same request succeeds.
    const again = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 3_000 }));
    await sim.run();
    expect(await again).toBe("ok");
    await sim.stop();
  });

  it("a name nobody announced is AGENT_NOT_FOUND at once, and INVALID_APPROVER is raised before anything is sent", async () => {
    const sim = simulate({ ...base, seed: 2 });
    await pendingPayment(sim);
    const sentBefore = sim.trace.filter((s) => s.kind.startsWith("net")).length;
    expect(await outcome(sim.peer.resume("ghost", "alice"))).toBe("AGENT_NOT_FOUND");
    expect(await outcome(sim.peer.resume("payer", ""))).toBe("INVALID_APPROVER");
    await sim.run();
    expect(sim.trace.filter((s) => s.kind.startsWith("net")).length).toBe(sentBefore);
    await sim.stop();
  });

  it("answers lost forever: CONTROL_TIMEOUT at the deadline, every attempt with the same requestId, and the effect happened once", async () => {
    const random = randomChooser(9);
    const dropAnswers: Chooser = { choose: (ready, step) => random.choose(ready, step), fault: (choice, kind) => kind === "net.drop" && choice.key.startsWith("net<") };
    const sim = simulate({ ...base, chooser: dropAnswers, faults: { network: { drop: 1 } } });
    const id = await pendingPayment(sim);
    const started = sim.view.now;
    const resumed = outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 3_500 }));
    await sim.run();
    expect(await resumed).toBe("CONTROL_TIMEOUT");
    expect(sim.view.now - started).toBeGreaterThanOrEqual(3_500);
    const sent = requests(sim.trace, "resume");
    expect(sent.length).toBe(4); // attempts of 1 s, 1 s, 1 s, 0.5 s
    expect(new Set(sent.map((r) => r.requestId)).size).toBe(1);
    expect(decisions(sim.view.audit, id).length).toBe(1); // "may still take effect": it did, once
    await sim.stop();
  });

  it("refusals come back by their code: RESUME_REFUSED by authorizeResume, STALE_APPROVAL for an agent not suspended; status and deny work", async () => {
    const sim = simulate({ ...base, seed: 5 });
    const id = await pendingPayment(sim);
    const status = sim.peer.status("payer");
    const refused = outcome(sim.peer.resume("payer", "mallory", { suspensionId: id }));
    await sim.run();
    expect(await status).toMatchObject({ name: "payer", status: "SUSPENDED", suspensionId: id, reason: "payment needs approval" });
    expect(await refused).toBe("RESUME_REFUSED");
    expect(sim.view.status("payer")).toBe("SUSPENDED");
    const denied = outcome(sim.peer.deny("payer", "bob", { suspensionId: id, reason: "over budget" }));
    await sim.run();
    expect(await denied).toBe("ok");
    expect(decisions(sim.view.audit, id).map((e) => [e.event, e.details.decider])).toEqual([["agent.deny", "bob"]]);
    const stale = outcome(sim.peer.resume("payer", "alice", { suspensionId: id }));
    await sim.run();
    expect(await stale).toBe("STALE_APPROVAL");
    expect(sim.view.agent<Payer>("payer").state.paid).toBe(0);
    await sim.stop();
  });
});

/** One run: a pause, then the peer's `decisions` raced over a faulty bus (faults only once the pause is there); what each got, and the audit. */
async function race(seed: number, network: { drop: number; delay: number; duplicate: number }, kills: number, calls: readonly ("resume" | "deny")[]) {
  let armed = false;
  const sim = simulate({ ...base, chooser: faultsOnlyWhen(randomChooser(seed), () => armed), faults: { network, kills } });
  const id = await pendingPayment(sim);
  armed = true;
  const results = calls.map((call) => outcome(call === "resume" ? sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 4_000 }) : sim.peer.deny("payer", "bob", { suspensionId: id, timeoutMs: 4_000 })));
  try {
    await sim.run();
    const outcomes = await Promise.all(results);
    return { outcomes, recorded: decisions(sim.view.audit, id), paid: sim.view.agent<Payer>("payer").state.paid, trace: sim.trace };
  } finally {
    armed = false; // no kill while stopping: a kill fault during sim.stop() leaves the old runtime's stop unable to finish
    await sim.stop();
  }
}

const faultArb = fc.record({ drop: fc.double({ min: 0, max: 0.5, noNaN: true }), delay: fc.double({ min: 0, max: 0.5, noNaN: true }), duplicate: fc.double({ min: 0, max: 0.5, noNaN: true }) });

describe("control across processes over a bus that drops, delays, duplicates and reorders (properties)", () => {
  it("one resume: at most one receipt; ok means it is on record; never STALE_APPROVAL; timeouts leave none or one", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), faultArb, fc.constantFrom(0, 0, 0.02), async (seed, network, kills) => {
        const { outcomes, recorded, paid, trace } = await race(seed, network, kills, ["resume"]);
        const [result] = outcomes;
        expect(["ok", "CONTROL_TIMEOUT", "AGENT_UNREACHABLE"]).toContain(result);
        expect(recorded.length).toBeLessThanOrEqual(1);
        if (result === "ok") expect(recorded.map((e) => e.event)).toEqual(["agent.resume"]);
        expect(paid).toBeLessThanOrEqual(recorded.length);
        expect(new Set(requests(trace, "resume").map((r) => r.requestId)).size).toBeLessThanOrEqual(1);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it("a resume and a deny raced: one decision on record; each requester's ok is its own decision; a refusal only when the other decided", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), faultArb, fc.constantFrom(0, 0.02), async (seed, network, kills) => {
        const { outcomes, recorded } = await race(seed, network, kills, ["resume", "deny"]);
        expect(recorded.length).toBeLessThanOrEqual(1);
        const own = { resume: "agent.resume", deny: "agent.deny" } as const;
        (["resume", "deny"] as const).forEach((call, i) => {
          const result = outcomes[i] as string;
          expect(["ok", "STALE_APPROVAL", "CONTROL_TIMEOUT", "AGENT_UNREACHABLE"]).toContain(result);
          if (result === "ok") expect(recorded.map((e) => e.event)).toEqual([own[call]]);
          if (result === "STALE_APPROVAL") expect(recorded.map((e) => e.event)).toEqual([own[call === "resume" ? "deny" : "resume"]]);
        });
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it("the faults happen: over 40 seeds the bus dropped, delayed (a later packet overtook one) and duplicated packets", async () => {
    const kinds = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      const { trace } = await race(seed, { drop: 0.3, delay: 0.3, duplicate: 0.3 }, 0, ["resume", "deny"]);
      for (const s of trace) if (s.kind.startsWith("net.")) kinds.add(s.kind);
      const late = trace.findIndex((s) => s.key.endsWith("+late"));
      const delayed = late < 0 ? -1 : trace.findIndex((s) => s.key === trace[late]?.key.replace("+late", ""));
      if (late >= 0 && trace.slice(delayed + 1, late).some((s) => s.kind === "net")) kinds.add("overtaken");
    }
    expect([...kinds].sort()).toEqual(["net.delay", "net.drop", "net.duplicate", "overtaken"]);
  }, 60_000);
});

describe("the simulated bus is deterministic and replayable", () => {
  const faults = { network: { drop: 0.3, delay: 0.3, duplicate: 0.2 }, kills: 0.01 };

  async function scripted(sim: Simulation): Promise<Outcome[]> {
    const id = await pendingPayment(sim);
    const results = [outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 4_000 })), outcome(sim.peer.deny("payer", "bob", { suspensionId: id, timeoutMs: 4_000 }))];
    await sim.run();
    await sim.stop();
    return Promise.all(results);
  }

  it("the same seed gives the same trace twice, and replay(trace) follows it to the same outcomes", async () => {
    for (const seed of [3, 17, 29]) {
      const first = simulate({ ...base, seed, faults });
      const outcomesA = await scripted(first);
      const second = simulate({ ...base, seed, faults });
      const outcomesB = await scripted(second);
      expect(second.trace).toEqual(first.trace);
      expect(outcomesB).toEqual(outcomesA);
      expect(first.trace.some((s) => s.kind.startsWith("net"))).toBe(true);
      const again = replay(first.trace, { ...base, faults });
      const outcomesC = await scripted(again);
      expect(again.trace.map((s) => `${s.kind} ${s.key}`)).toEqual(first.trace.map((s) => `${s.kind} ${s.key}`));
      expect(outcomesC).toEqual(outcomesA);
    }
  });

  it("a failing run replays to the same failure at the same step", async () => {
    // A planted invariant: "nobody resumes the payer" fails when the resume's receipt is appended.
    const invariants = [(view: Simulation["view"]) => (view.audit.some((e) => e.event === "agent.resume") ? "the payer was resumed" : undefined)];
    const failing = async (sim: Simulation): Promise<unknown> => {
      const id = await pendingPayment(sim);
      void outcome(sim.peer.resume("payer", "alice", { suspensionId: id, timeoutMs: 4_000 }));
      return sim.run().then(() => undefined, (error: unknown) => error);
    };
    const first = (await failing(simulate({ ...base, seed: 11, faults: { network: { drop: 0.4, delay: 0.4 } }, invariants }))) as { code: string; trace: SimulationStep[] };
    expect(first.code).toBe("SIMULATION_INVARIANT");
    const again = (await failing(replay(first.trace, { ...base, faults: { network: { drop: 0.4, delay: 0.4 } }, invariants }))) as { code: string; trace: SimulationStep[] };
    expect(again.code).toBe("SIMULATION_INVARIANT");
    expect(again.trace.map((s) => s.key)).toEqual(first.trace.map((s) => s.key));
  });
});
