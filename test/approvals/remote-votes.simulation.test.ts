/**
 * Votes from another process under `simulate`: `sim.peer` votes on a held
 * action of the simulation's runtime through the real control protocol
 * (`civitas.ctl.approval`), on the simulated bus that drops, delays and
 * duplicates packets, with the owner killed in between. The owner decides
 * every vote once (a retried requestId is answered from its first outcome,
 * also after a kill), and the action is handled at most once, only once
 * approved.
 */
import { afterEach, describe, expect, it } from "vitest";
import { APPROVALS_KEY, type ApprovalPolicy, type ApprovalView, type JsonObject } from "../../src/index.js";
import { simulate } from "../../src/entries/testing.js";
import { randomChooser } from "../../src/testing/simulation/random-chooser.js";
import type { Chooser, Simulation, SimulationOptions, SimulationStep } from "../../src/testing/simulation/types.js";
import { faultOnce } from "../testing/simulation/fixtures.js";
import { Payments } from "./fixtures.js";

/** Two of three finance approvers, with no deadline: `sim.run()` lets virtual time pass, and nothing may expire meanwhile. */
const approvalPolicy: ApprovalPolicy = ({ message }) =>
  message.type === "pay" ? { decision: "require_approval", reason: "large payment", rule: { stages: [{ name: "finance", approvers: ["ana", "ben", "cy"], min: 2 }] } } : { decision: "allow" };

const base = {
  root: () => new Payments("payments"),
  runtime: { approvalPolicy, authorizeApproval: (_view: ApprovalView, approver: string) => approver !== "mallory" },
} satisfies Omit<SimulationOptions, "seed">;

let current: Simulation | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

function outcome<T>(promise: Promise<T>): Promise<T | string> {
  return promise.catch((error: unknown) => String((error as { code?: unknown }).code ?? error));
}

/** Starts `sim`, asks for a large payment, and returns the id of its held request. */
async function heldPayment(sim: Simulation): Promise<string> {
  current = sim;
  await sim.start();
  void sim.ask("payments", "pay", { amountCents: 250_000, to: "ACME" }, { timeoutMs: 1_000_000 }).catch(() => undefined);
  await sim.idle();
  const [request] = (sim.view.stored("payments")?.[APPROVALS_KEY] as JsonObject[] | undefined) ?? [];
  expect(request?.status).toBe("pending");
  return request!.approvalId as string;
}

/** The vote requests that reached the owner (copies included), with the requestId each carried. */
function voteRequests(trace: readonly SimulationStep[]): string[] {
  return trace.filter((s) => s.key.startsWith("net>ctl.payments:approval#") && (s.kind === "net" || s.kind === "net.duplicate")).map((s) => /of (\S+) \(attempt/.exec(s.detail ?? "")?.[1] ?? "?");
}

const accepted = (sim: Simulation, id: string, approver: string): number =>
  sim.view.audit.filter((e) => e.event === "approval.voted" && e.details.approvalId === id && e.details.approver === approver && e.details.accepted === true).length;

describe("votes from another process on the simulated bus", () => {
  it("a vote whose answer is dropped is sent again with the same requestId: counted once, and the voter gets the request", async () => {
    const sim = simulate({ ...base, chooser: faultOnce("net<ctl.payments:result#1", "net.drop"), faults: { network: { drop: 0.5 } } });
    const id = await heldPayment(sim);
    const voted = outcome(sim.peer.approve("payments", id, "ana", { timeoutMs: 5_000 }));
    await sim.run();
    expect(sim.trace.find((s) => s.key === "net<ctl.payments:result#1")?.kind).toBe("net.drop");
    expect(await voted).toMatchObject({ approvalId: id, status: "pending", votes: [{ approver: "ana", vote: "approve" }] });
    const sent = voteRequests(sim.trace);
    expect(sent.length).toBe(2);
    expect(new Set(sent).size).toBe(1);
    expect(accepted(sim, id, "ana")).toBe(1);
  });

  it("a retried vote after the owner was killed between the vote and its answer gets the recorded vote; the payment is handled once", async () => {
    const sim = simulate({ ...base, chooser: faultOnce("net<ctl.payments:result#2", "kill"), faults: { kills: 0.5 } });
    const id = await heldPayment(sim);
    const first = outcome(sim.peer.approve("payments", id, "ana", { timeoutMs: 5_000 }));
    await sim.run();
    expect(await first).toMatchObject({ status: "pending" });
    // the second vote approves; the owner is killed before its answer arrives, and the retry reaches the restarted owner
    const second = outcome(sim.peer.approve("payments", id, "ben", { timeoutMs: 5_000 }));
    await sim.run();
    expect(sim.trace.find((s) => s.key === "net<ctl.payments:result#2")?.kind).toBe("kill");
    expect(await second).toMatchObject({ approvalId: id, status: "approved", decidedBy: "ben" });
    expect((sim.view.stored("payments")?.paid as string[] | undefined) ?? []).toHaveLength(1);
    // a new vote (not a retry) is refused: the request is decided
    const late = outcome(sim.peer.approve("payments", id, "cy", { timeoutMs: 5_000 }));
    await sim.run();
    expect(await late).toBe("STALE_APPROVAL");
  });

  it("refusals come back by their codes; an agent that does not hold the id answers APPROVAL_NOT_FOUND", async () => {
    const sim = simulate({ ...base, seed: 3 });
    const id = await heldPayment(sim);
    const stranger = outcome(sim.peer.approve("payments", id, "zed"));
    const hooked = outcome(sim.peer.denyApproval("payments", id, "mallory", { reason: "no" }));
    const unknown = outcome(sim.peer.approve("payments", "01900000-0000-7000-8000-000000000000", "ana"));
    await sim.run();
    expect([await stranger, await hooked, await unknown]).toEqual(["APPROVER_NOT_ALLOWED", "RESUME_REFUSED", "APPROVAL_NOT_FOUND"]);
    await expect(sim.peer.approve("payments", id, "")).rejects.toMatchObject({ code: "INVALID_APPROVER" });
    const denied = outcome(sim.peer.denyApproval("payments", id, "cy", { reason: "duplicate invoice" }));
    await sim.run();
    expect(await denied).toMatchObject({ status: "denied", decidedBy: "cy", decisionReason: "duplicate invoice" });
    expect((sim.view.stored("payments")?.paid as string[] | undefined) ?? []).toEqual([]);
  });

  it("over many seeds with lost, late and duplicated packets and kills: handled at most once, only when approved; one decision", async () => {
    const endings = new Map<string, number>();
    const faults = new Map<string, number>();
    for (let seed = 0; seed < 40; seed++) {
      // faults only once the request is held: the peer's votes meet them, the ask that makes the request does not
      let armed = false;
      const random = randomChooser(seed);
      const chooser: Chooser = { choose: (ready, step) => random.choose(ready, step), fault: (choice, kind, p, step) => armed && (random.fault?.(choice, kind, p, step) ?? false) };
      const sim = simulate({ ...base, seed, chooser, faults: { network: { drop: 0.2, delay: 0.2, duplicate: 0.2 }, kills: 0.02 } });
      const id = await heldPayment(sim);
      armed = true;
      const votes = seed % 3 === 0 ? [sim.peer.approve("payments", id, "ana"), sim.peer.denyApproval("payments", id, "cy", { reason: "no" }), sim.peer.approve("payments", id, "ben")] : [sim.peer.approve("payments", id, "ana"), sim.peer.approve("payments", id, "ben"), sim.peer.approve("payments", id, "ana")];
      const settled = votes.map((vote) => outcome(vote));
      await sim.run();
      for (const result of await Promise.all(settled)) {
        expect(typeof result === "string" ? ["STALE_APPROVAL", "CONTROL_TIMEOUT", "AGENT_UNREACHABLE"] : ["ok"], `seed ${seed}: ${JSON.stringify(result)}`).toContain(typeof result === "string" ? result : "ok");
      }
      const [final] = (sim.view.stored("payments")?.[APPROVALS_KEY] as JsonObject[] | undefined) ?? [];
      const paid = (sim.view.stored("payments")?.paid as string[] | undefined) ?? [];
      const decided = new Set(sim.view.audit.filter((e) => e.event === "approval.decided" && e.details.approvalId === id).map((e) => e.details.receiptId));
      expect(paid.length, `seed ${seed}: handled at most once`).toBeLessThanOrEqual(1);
      for (const approver of ["ana", "ben", "cy"]) expect(new Set(sim.view.audit.filter((e) => e.event === "approval.voted" && e.details.approvalId === id && e.details.approver === approver && e.details.accepted === true).map((e) => e.details.receiptId)).size, `seed ${seed}: ${approver} counted once`).toBeLessThanOrEqual(1);
      // released once: stored consumed before the handler ran (a kill during the handling may lose the payment: at most once)
      if (final?.status === "approved") expect(final.consumed, `seed ${seed}: consumed`).toBe(true);
      else expect(paid, `seed ${seed}: nothing handled after ${String(final?.status)}`).toEqual([]);
      if (final?.status !== "pending") expect(decided.size, `seed ${seed}: one decision`).toBe(1);
      endings.set(String(final?.status), (endings.get(String(final?.status)) ?? 0) + 1);
      for (const step of sim.trace) if (["net.drop", "net.delay", "net.duplicate", "kill"].includes(step.kind)) faults.set(step.kind, (faults.get(step.kind) ?? 0) + 1);
      await sim.stop();
    }
    expect([...endings.keys()].sort()).toEqual(["approved", "denied"]);
    // the seeds meet every fault kind
    expect([...faults.keys()].sort()).toEqual(["kill", "net.delay", "net.drop", "net.duplicate"]);
  }, 300_000);
});
