/**
 * A runtime event listener that throws never breaks the runtime: agents keep
 * their loops, stops finish.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { ProcessStatus } from "civitas-ts";
import { sleep, supervisedRuntimes, until } from "../support/runtimes.js";
import { gate } from "../support/agents.js";
import { Sink } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

describe("a throwing message.expired listener", () => {

  it("a throwing 'message.expired' listener does not crash the agent whose mailbox expired the message", async () => {
    const { TestClock } = await import("civitas-ts/testing");
    const clock = new TestClock();
    const opened = gate();
    class SlowSink extends Sink {
      override async onStart(): Promise<void> {
        await opened.promise;
      }
    }
    const sink = new SlowSink("sink");
    const rt = supervised([sink], { clock });
    rt.on("message.expired", () => {
      throw new Error("listener bug");
    });
    const starting = rt.start(); // sent while it starts, the messages wait in the mailbox
    await rt.send("sink", { n: 1 }, { ttlMs: 10 });
    await rt.send("sink", { n: 2 });
    await clock.advance(11);
    opened.open();
    await starting;
    await until(() => sink.seen.length === 1);
    expect(sink.seen.map((m) => m.payload.n)).toEqual([2]);
    expect(sink.incarnation).toBe(1);
    expect(sink.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("throwing supervised event listeners", () => {
  it("a throwing 'agent.status' listener does not leave an agent RUNNING with no message loop", async () => {
    const sink = new Sink("sink");
    const rt = supervised([sink]);
    let calls = 0;
    rt.on("agent.status", () => {
      calls++;
      if (calls === 1) throw new Error("listener bug");
    });
    await rt.start().catch(() => undefined);
    await rt.send("sink", { n: 1 }).catch(() => undefined);
    await sleep(50);
    // either the agent handles its mail, or it is not reported as RUNNING
    expect({ status: sink.status, handled: sink.seen.length }).toEqual({ status: ProcessStatus.RUNNING, handled: 1 });
  });
});
