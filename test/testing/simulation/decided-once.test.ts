/**
 * Issue 21 under simulation: every pause ends in exactly one effective decision, taken by its owner
 * of record, through failed and lost-free writes, crashes, kills between a decision's receipt and
 * its marker write, and lasting takeovers (fenced writes).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/audit-event.js";
import { OwnerFences } from "../../../src/audit/owner-fence.js";
import type { Message } from "../../../src/message/message.js";
import { AgentProcess } from "../../../src/process/agent-process.js";
import { ProcessStatus } from "../../../src/contracts/process-status.js";
import type { SuspensionMarker } from "../../../src/state/suspension-marker.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { Simulation, SimulationFaults, SimulationInvariant, SimulationView } from "../../../src/testing/simulation/types.js";
import { randomChooser } from "../../../src/testing/simulation/random-chooser.js";
import type { Chooser } from "../../../src/testing/simulation/types.js";
import { alone, faultOnce } from "./fixtures.js";

/**
 * The seeded random chooser, with faults only while armed (a kill during `sim.start()` or
 * `sim.stop()` ends the simulation with "runtime.start()/stop() cannot finish", a limit of the
 * simulator outside this issue).
 */
function armedLater(seed: number): { chooser: Chooser; arm: (on: boolean) => void } {
  const base = randomChooser(seed);
  let armed = false;
  return { chooser: { choose: (ready, step) => base.choose(ready, step), fault: (choice, asked, probability, step) => armed && base.fault !== undefined && base.fault(choice, asked, probability, step) }, arm: (on) => (armed = on) };
}

const MARKER = "_civitas.suspended";
const SETTLING = new Set(["agent.resume", "agent.deny", "agent.suspend.cancelled"]);

/** Asks for a pause with a deadline from its handler, then checkpoints; records its decisions in `journal` (shared across kills). */
class Asker extends AgentProcess<{ handled: number }> {
  override state = { handled: 0 };
  constructor(
    name: string,
    private readonly journal: string[],
  ) {
    super(name);
  }
  override async handle(message: Message): Promise<void> {
    this.state.handled += 1;
    if (message.payload.pause === true) this.suspend("approve me", { expiresInMs: 500 });
    await this.checkpoint();
  }
  override async onResume(approver: string, marker: SuspensionMarker): Promise<void> {
    this.journal.push(`onResume ${approver} ${marker.suspensionId}`);
  }
  override async onDeny(decider: string, marker: SuspensionMarker): Promise<void> {
    this.journal.push(`onDeny ${decider} ${marker.suspensionId}`);
  }
}

const built: Simulation[] = [];
afterEach(async () => {
  for (const sim of built.splice(0)) await sim.stop();
});

/** Per pause, its settlements that decide (not a fenced-out owner's: its fence older than one the log showed before it). */
function settledIds(view: SimulationView): Map<string, number> {
  const settled = new Map<string, number>();
  const fences = new OwnerFences();
  for (const event of view.audit) {
    const id = event.details.suspensionId;
    if (SETTLING.has(event.event) && typeof id === "string" && fences.fencedOut(event) === undefined) settled.set(id, (settled.get(id) ?? 0) + 1);
    fences.see(event);
  }
  return settled;
}

/** The settlements a fenced-out owner appended (after the successor's claim): on record, deciding nothing. */
function fencedOutReceipts(view: SimulationView): AuditEvent[] {
  const fences = new OwnerFences();
  return view.audit.filter((event) => {
    const out = SETTLING.has(event.event) && fences.fencedOut(event) !== undefined;
    fences.see(event);
    return out;
  });
}

/**
 * No write after a pause's decision carries its marker: once the log holds the decision of the pause
 * the store shows, the stored record may only change to one without that pause.
 */
function decidedStaysDecided(agent: string): SimulationInvariant {
  let watched: { id: string; record: string } | undefined;
  return function decidedStaysDecided(view) {
    const stored = view.stored(agent);
    const id = (stored?.[MARKER] as { suspensionId?: string } | undefined)?.suspensionId;
    const record = JSON.stringify(stored);
    if (id === undefined || !settledIds(view).has(id)) {
      watched = undefined;
      return;
    }
    if (watched?.id === id && watched.record !== record) return `a write after the decision of ${id} still carries its marker: ${record}`;
    watched = { id, record };
  };
}

async function scenario(seed: number, faults: SimulationFaults): Promise<{ sim: Simulation; journal: string[]; arm: (on: boolean) => void }> {
  const journal: string[] = [];
  const { chooser, arm } = armedLater(seed);
  const sim = simulate({ root: () => alone(new Asker("asker", journal)), chooser, faults, invariants: [decidedStaysDecided("asker")] });
  built.push(sim);
  await sim.start();
  arm(true);
  const calls: Promise<unknown>[] = [sim.send("asker", "work", { pause: true }).catch(() => undefined)];
  await sim.idle();
  const id = (sim.view.stored("asker")?.[MARKER] as { suspensionId?: string } | undefined)?.suspensionId;
  if (seed % 3 !== 0 && id !== undefined) calls.push((seed % 3 === 1 ? sim.resume("asker", "alice", { suspensionId: id }) : sim.deny("asker", "bob", { suspensionId: id })).catch((error: { code?: string }) => error.code));
  await sim.run();
  calls.push(sim.send("asker", "work", {}).catch(() => undefined));
  await sim.run();
  // Not awaited: a call in flight when the process was killed is answered by nobody (each has its catch).
  void calls;
  return { sim, journal, arm };
}

/** Every pause of the log: at most one decision on record, and its hook ran at most once; what was decided without a lasting takeover is no longer SUSPENDED. */
function expectDecidedOnce(sim: Simulation, journal: readonly string[]): void {
  const settled = settledIds(sim.view);
  for (const [id, count] of settled) {
    expect(count, `decisions of ${id}`).toBe(1);
    const hooks = journal.filter((line) => line.endsWith(` ${id}`)).length;
    // Once, also when the decision's clearing write failed and the process was killed before a later write
    // stored the cleared marker: agent.settlement.applied, recorded before the hook, tells the restart.
    expect(hooks, `hooks of ${id}\n${sim.trace.map((s) => `${s.kind} ${s.key} ${s.detail ?? ""}`).join("\n")}`).toBeLessThanOrEqual(1);
    // A decided pause is never restored: it is not what the live agent is paused under.
    if (sim.view.status("asker") === ProcessStatus.SUSPENDED) expect(sim.view.agent<Asker>("asker").suspension?.suspensionId).not.toBe(id);
  }
  // Taken by its owner of record: no decision is on record after the agent.fenced of the incarnation it was fenced in.
  const fenced = sim.view.audit.findIndex((e) => e.event === "agent.fenced");
  const killed = sim.trace.some((s) => s.kind === "kill");
  if (fenced >= 0 && !killed) expect(sim.view.audit.slice(fenced).filter((e) => SETTLING.has(e.event))).toEqual([]);
  // A fenced-out owner's receipt is carried out by nobody: its hook never ran.
  for (const zombie of fencedOutReceipts(sim.view)) {
    const who = zombie.event === "agent.resume" ? `onResume ${zombie.details.approver as string}` : `onDeny ${zombie.details.decider as string}`;
    const id = zombie.details.suspensionId as string;
    if (settledIds(sim.view).has(id)) continue; // decided by its owner of record too: that decision's hook is the one
    expect(journal, `the fenced-out ${zombie.event} of ${id} was carried out`).not.toContain(`${who} ${id}`);
  }
}

describe("every pause ends in one decision, taken by its owner of record (simulation)", () => {
  it("the failed checkpoint, restart past the deadline and expiry of issue 21 #3: denied once, never restored, across a kill", async () => {
    const journal: string[] = [];
    const sim = simulate({ root: () => alone(new Asker("asker", journal)), chooser: faultOnce("store.set:asker#1", "store.fail"), faults: { storeWrites: { fail: 1 } }, invariants: [decidedStaysDecided("asker")] });
    built.push(sim);
    await sim.start();
    void sim.send("asker", "work", { pause: true }).catch(() => undefined);
    await sim.run();
    const denials = sim.view.audit.filter((e) => e.event === "agent.deny");
    expect(denials).toHaveLength(1);
    expect(denials[0]?.details).toMatchObject({ decider: "expiry", expired: true });
    expect(sim.view.status("asker")).toBe(ProcessStatus.RUNNING);
    expect(sim.view.stored("asker")?.[MARKER]).toBeUndefined();
    await sim.kill();
    await sim.run();
    expect(sim.view.status("asker")).toBe(ProcessStatus.RUNNING);
    expect(sim.view.audit.filter((e) => e.event === "agent.deny")).toHaveLength(1);
    expect(journal).toEqual([`onDeny expiry ${denials[0]?.details.suspensionId as string}`]);
  });

  it("a takeover while a resume's receipt is pending: the receipt is on record after the successor's claim, decides nothing, and is carried out by nobody", async () => {
    const journal: string[] = [];
    const base = randomChooser(7);
    let checkpointWrite = "";
    // Every store write opens before the resume's receipt does; the checkpoint's write is fenced (the takeover).
    const chooser: Chooser = {
      choose: (ready, step) => {
        const write = ready.findIndex((choice) => choice.kind === "store");
        return write >= 0 ? write : base.choose(ready, step);
      },
      fault: (choice, asked) => asked === "store.fenced" && choice.key === checkpointWrite,
    };
    let takeOverDuring = "";
    // A write from outside a handler (a timer's checkpoint) while the resume is being decided: its receipt and the write wait together.
    const authorizeResume = (_agent: string, approver: string): boolean => {
      if (approver === takeOverDuring) void (sim.view.agent<Asker>("asker") as unknown as { checkpoint(): Promise<void> }).checkpoint().catch(() => undefined);
      return true;
    };
    const sim = simulate({ root: () => alone(new Asker("asker", journal)), chooser, faults: { storeWrites: { fenced: 1 } }, invariants: [decidedStaysDecided("asker")], runtime: { authorizeResume } });
    built.push(sim);
    await sim.start();
    void sim.send("asker", "work", { pause: true }).catch(() => undefined);
    await sim.idle();
    const id = (sim.view.stored("asker")?.[MARKER] as { suspensionId: string }).suspensionId;
    const writes = sim.trace.filter((step) => step.kind === "store.write").length;
    checkpointWrite = `store.set:asker#${writes + 1}`;
    takeOverDuring = "mallory";
    const resumed = sim.resume("asker", "mallory", { suspensionId: id }).then(
      () => "resolved",
      (error: { code?: string }) => error.code,
    );
    await sim.idle();
    expect(await resumed).toBe("STATE_FENCED");
    const zombies = fencedOutReceipts(sim.view);
    expect(zombies.map((e) => [e.event, e.details.approver, e.details.fence])).toEqual([["agent.resume", "mallory", 1]]);
    const claimed = sim.view.audit.findIndex((e) => e.event === "agent.claimed" && e.details.fence === 2);
    expect(claimed).toBeGreaterThanOrEqual(0);
    expect(sim.view.audit.indexOf(zombies[0] as AuditEvent)).toBeGreaterThan(claimed);
    expect(settledIds(sim.view).has(id)).toBe(false);
    expect(journal).toEqual([]);
    // The next incarnation owns the agent again: the pause is restored, and the zombie's approval is not rolled forward.
    await sim.kill();
    await sim.idle();
    expect(sim.view.status("asker")).toBe(ProcessStatus.SUSPENDED);
    expect(journal).toEqual([]);
    const denied = sim.deny("asker", "bob", { suspensionId: id });
    await sim.idle();
    await denied;
    expect(journal).toEqual([`onDeny bob ${id}`]);
    expect([...settledIds(sim.view)]).toEqual([[id, 1]]);
  });

  it("over 150 seeds with failed writes, crashes, kills and lasting takeovers: one decision per pause, hooks at most once, nothing decided after the fence", async () => {
    let kills = 0;
    let fences = 0;
    let decided = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const { sim, journal, arm } = await scenario(seed, { storeWrites: { fail: 0.1, fenced: 0.05 }, crashes: 0.05, kills: 0.1 });
      expectDecidedOnce(sim, journal);
      if (sim.trace.some((s) => s.kind === "kill")) kills++;
      if (sim.view.audit.some((e) => e.event === "agent.fenced")) fences++;
      decided += settledIds(sim.view).size;
      arm(false);
      await sim.stop();
    }
    // The faults happened: the property was not checked on fault-free runs only.
    expect(kills).toBeGreaterThan(5);
    expect(fences).toBeGreaterThan(2);
    expect(decided).toBeGreaterThan(50);
  }, 120_000);
});
