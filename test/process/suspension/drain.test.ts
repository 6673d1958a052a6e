import { afterEach, describe, expect, it, vi } from "vitest";
import { createMessage, ProcessStatus, SUSPENSION_KEY, type Message } from "../../../src/index.js";
import { forceMessage } from "../../../src/mailbox/mailbox-internals.js";
import { mintControl } from "../../../src/process/control-authority.js";
import { suspendedRig, teardown } from "./helpers.js";
import { ProcessRunner } from "../../../src/process/process-runner.js";
import { track } from "../../support/outcome.js";
import { turns, waitUntil } from "../../support/agents.js";

afterEach(teardown);

const S = ProcessStatus;

describe("priority-only drain while SUSPENDED", () => {
  it("business messages and civitas.eval.correction stay queued in order, then run in FIFO order after resume", async () => {
    const { agent, runtime } = await suspendedRig();
    agent.timeline = [];
    for (let seq = 1; seq <= 6; seq++) {
      if (seq % 3 === 0) await runtime.send("a", { seq }, { type: "civitas.eval.correction" });
      else await runtime.send("a", { seq });
      expect(agent.mailbox.size).toBe(seq);
    }
    await turns(20);
    expect(agent.timeline).toEqual([]);
    expect(agent.status).toBe(S.SUSPENDED);
    await runtime.resume("a", "alice");
    await waitUntil(() => agent.mailbox.size === 0 && agent.active === 0, "queue drained");
    await turns(5);
    expect(agent.timeline).toEqual(["onResume:alice", "handle:1", "handle:2", "correction:3", "handle:4", "handle:5", "correction:6"]);
    expect(agent.handled).toEqual([1, 2, 4, 5]);
    expect(agent.corrections).toEqual([3, 6]);
  });

  it("backpressure applies: a send to a full business lane stays pending until resume makes room", async () => {
    const { agent, runtime } = await suspendedRig({ agentOptions: { mailboxSize: 3 } });
    await runtime.send("a", { seq: 1 });
    await runtime.send("a", { seq: 2 });
    await runtime.send("a", { seq: 3 });
    const fourth = track(runtime.send("a", { seq: 4 }));
    const fifth = track(runtime.send("a", { seq: 5 }));
    await turns(20);
    expect(fourth.state).toBe("pending");
    expect(fifth.state).toBe("pending");
    expect(agent.mailbox.size).toBe(3);
    expect(agent.handled).toEqual([]);
    await runtime.resume("a", "alice");
    await fourth.promise;
    await fifth.promise;
    await waitUntil(() => agent.handled.length === 5, "all five handled");
    expect(agent.handled).toEqual([1, 2, 3, 4, 5]);
  });

  it("a heartbeat is answered while SUSPENDED, and the business queue is left alone", async () => {
    const { agent, runtime } = await suspendedRig();
    await runtime.send("a", { seq: 1 });
    const acks: Message[] = [];
    runtime.on("reply.late", (m) => acks.push(m));
    // As the runtime's transport would deliver it: minted by the runtime, forced past the lane's capacity.
    forceMessage(
      agent.mailbox,
      mintControl(createMessage({ sender: "_runtime", recipient: "a", type: "_agency.heartbeat", payload: {}, correlationId: "hb-1", replyTo: "_runtime" })),
    );
    await waitUntil(() => acks.length === 1, "heartbeat ack");
    expect(acks[0]!.type).toBe("_agency.heartbeat_ack");
    expect(acks[0]!.correlationId).toBe("hb-1");
    expect(acks[0]!.sender).toBe("a");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.mailbox.size).toBe(1);
    expect(agent.handled).toEqual([]);
  });

  it("a repeated runtime.suspend updates the reason and keeps since and suspensionId", async () => {
    const { agent, runtime, clock, store, audit } = await suspendedRig();
    const first = agent.suspension!;
    await clock.advance(5_000);
    await runtime.suspend("a", "second reason");
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension).toEqual({ ...first, reason: "second reason" });
    expect(await store.marker("a")).toEqual({ ...first, reason: "second reason" });
    expect(agent.suspends).toEqual(["hold"]);
    expect(audit.ofType("agent.suspend", "a")).toHaveLength(1);
    expect(runtime.listSuspended()).toEqual([{ name: "a", reason: "second reason", since: first.since, suspensionId: first.suspensionId }]);
  });

  it("a self-suspend while already SUSPENDED (e.g. from a timer) also only updates the reason", async () => {
    const { agent, clock } = await suspendedRig();
    const first = agent.suspension!;
    clock.setTimeout(() => agent.suspend("from timer"), 100);
    await clock.advance(100);
    await waitUntil(() => agent.suspension?.reason === "from timer", "reason updated");
    expect(agent.suspension).toEqual({ ...first, reason: "from timer" });
    expect(agent.suspends).toEqual(["hold"]);
  });

  it("runtime.stop works while SUSPENDED and nothing queued is handled", async () => {
    const { agent, runtime } = await suspendedRig();
    for (let seq = 1; seq <= 5; seq++) await runtime.send("a", { seq });
    await runtime.stop();
    expect(agent.status).toBe(S.STOPPED);
    expect(agent.entered).toBe(0);
  });

  it("civitas.eval.halt (priority) stops it; queued business is not handled", async () => {
    const { agent, runtime } = await suspendedRig();
    for (let seq = 1; seq <= 3; seq++) await runtime.send("a", { seq });
    await runtime.send("a", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    await turns(10);
    expect(agent.entered).toBe(0);
  });
});

describe("no spurious wake-ups while SUSPENDED", () => {
  it("10,000 business puts never wake the parked loop and none is handled; after resume all run in order", async () => {
    const { agent, runtime } = await suspendedRig({ agentOptions: { mailboxSize: 20_000 } });
    await turns(3);
    const ready = vi.spyOn(ProcessRunner.prototype, "mailboxReady") // the loop's wake-up: the only agent here is "a";
    const N = 10_000;
    for (let seq = 0; seq < N; seq++) await runtime.send("a", { seq });
    await turns(10);
    expect(ready).toHaveBeenCalledTimes(0);
    expect(agent.entered).toBe(0);
    expect(agent.mailbox.size).toBe(N);
    // a priority message does wake it (exactly once), without taking business
    await runtime.suspend("a", "still holding");
    expect(ready).toHaveBeenCalledTimes(1);
    expect(agent.entered).toBe(0);
    expect(agent.state[SUSPENSION_KEY]).toMatchObject({ reason: "still holding" });
    await runtime.resume("a", "alice");
    await waitUntil(() => agent.handled.length === N, "all handled", 50_000);
    expect(agent.handled.every((seq, i) => seq === i)).toBe(true);
    expect(agent.overlaps).toBe(0);
  });
});
