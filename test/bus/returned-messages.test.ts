/**
 * Messages returned from handle() and replies: checked like sent ones, routed
 * by correlation id, never handled by an agent that may not take them.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, createMessage, ProcessStatus, type Message } from "civitas-ts";
import { sleep, supervisedRuntimes, until } from "../support/review-kit.js";

const supervised = supervisedRuntimes();

class Sink extends AgentProcess {
  readonly seen: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.seen.push(message);
  }
}

describe("messages returned from handle()", () => {
  it("a malformed message returned from handle() is refused (logged), not delivered unchecked and not a supervised crash", async () => {
    class Forwarder extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        // objects that pass the supervised's isMessage() check (id and recipient are strings)
        return message.payload.typed === true
          ? ({ id: "not-a-uuid", recipient: "victim", type: "message", sender: "fwd", payload: { when: new Date(0) } } as unknown as Message)
          : ({ id: "not-a-uuid", recipient: "victim", payload: { n: 0 } } as unknown as Message);
      }
    }
    const fwd = new Forwarder("fwd");
    const victim = new Sink("victim");
    const rt = supervised([fwd, victim]);
    await rt.start();
    await rt.send("fwd", { typed: false });
    await rt.send("fwd", { typed: true });
    await sleep(30);
    await rt.send("victim", { n: 1 });
    await until(() => victim.seen.some((m) => m.payload.n === 1));
    // the forwarder must not crash on an internal TypeError, the victim must not get a non-JSON payload
    expect({ fwdIncarnation: fwd.incarnation, victimGot: victim.seen.map((m) => m.payload) }).toEqual({ fwdIncarnation: 1, victimGot: [{ n: 1 }] });
  });

  it("a business message given priority 1 and returned from handle() is not handled by a SUSPENDED agent", async () => {
    class Pusher extends AgentProcess {
      override async handle(): Promise<Message> {
        return createMessage({ sender: this.name, recipient: "paused", type: "pay", payload: { amount: 100 }, priority: 1 });
      }
    }
    const paused = new Sink("paused");
    const rt = supervised([new Pusher("pusher"), paused]);
    await rt.start();
    await rt.suspend("paused", "needs approval");
    expect(paused.status).toBe(ProcessStatus.SUSPENDED);
    await rt.send("pusher", {});
    await sleep(50);
    // SPEC §5 S3: while SUSPENDED only control messages are taken; business work waits for the approver
    expect(paused.seen.map((m) => m.type)).toEqual([]);
  });
});
