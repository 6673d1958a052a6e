/**
 * Mailbox waits and an AbortSignal: an aborted wait takes or enqueues nothing,
 * and aborted waiters are let go at once.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { createMessage, Mailbox, type JsonObject, type Message } from "../../src/index.js";
import v8 from "node:v8";
import vm from "node:vm";
import { eventually, turns } from "../runtime/fixtures.js";
import { outcome, codeOf, track } from "../support/outcome.js";
import { whenStarted, supervisedRuntimes } from "../support/runtimes.js";
import { Stuck } from "../support/probe-agents.js";

v8.setFlagsFromString("--expose-gc");

const gc = vm.runInNewContext("gc") as () => void;

const supervised = supervisedRuntimes();

function msg(n: number, extra: Partial<Parameters<typeof createMessage>[0]> = {}): Message {
  return createMessage({ sender: "t", recipient: "box", payload: { n }, ...extra });
}

describe("Mailbox waits with an already aborted signal", () => {
  it("get() with an already aborted signal takes nothing, as put() with one enqueues nothing", async () => {
    const mailbox = new Mailbox({ capacity: 4 });
    const controller = new AbortController();
    controller.abort(new Error("gave up"));
    // put: rejected although there is room, nothing enqueued
    await expect(mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 1 } }), { signal: controller.signal })).rejects.toThrow("gave up");
    expect(mailbox.size).toBe(0);
    await mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 2 } }));
    // get: "Aborting rejects the pending call with signal.reason; nothing is enqueued or taken"
    const got = await outcome(mailbox.get({ signal: controller.signal }), 100);
    expect(got !== "pending" && !got.ok).toBe(true);
    expect(mailbox.size).toBe(1); // the message is still there for a caller that did not give up
  });
});

describe("aborted waits do not pile up", () => {
  /** Runs a full, forced garbage collection (after the current job, so WeakRefs can clear). */
  async function collect(): Promise<void> {
    for (let i = 0; i < 2; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
  }

  it("puts aborted behind a live waiting put are let go, not kept until the lane drains", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(0));
    const live = track(box.put(msg(1))); // waits, never aborted
    const refs: WeakRef<Message>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      const m = msg(100 + i);
      refs.push(new WeakRef(m));
      const p = box.put(m, { signal: controller.signal });
      controller.abort(new Error("gave up"));
      expect(codeOf(await p.catch((e: unknown) => e))).toBe("not a CivitasError: Error: gave up");
    }
    await collect();
    // every aborted put has been refused: the mailbox must not hold on to any of them
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThan(10);
    expect(live.state).toBe("pending");
  });

  it("gets aborted behind a live waiting get are let go, not kept until a message arrives", async () => {
    const box = new Mailbox({ capacity: 1 });
    const live = track(box.get());
    const refs: WeakRef<AbortSignal>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      refs.push(new WeakRef(controller.signal));
      const p = box.get({ signal: controller.signal });
      controller.abort(new Error("gave up"));
      await p.catch(() => undefined);
    }
    await collect();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThan(10);
    expect(live.state).toBe("pending");
  });

  it("runtime.send calls aborted while another send waits on a full mailbox do not keep their messages", async () => {
    const s = new Stuck("s", { mailboxSize: 1 });
    const rt = await whenStarted(supervised([s]));
    await rt.send("s", { n: 0 }); // being handled
    await turns();
    await rt.send("s", { n: 1 }); // fills the lane
    const live = track(rt.send("s", { n: 2 })); // waits for room, no signal
    const refs: WeakRef<JsonObject>[] = [];
    for (let i = 0; i < 200; i++) {
      const controller = new AbortController();
      const payload = { n: 100 + i };
      refs.push(new WeakRef(payload));
      const p = rt.send("s", payload, { signal: controller.signal });
      controller.abort(new Error("gave up"));
      await p.catch(() => undefined);
    }
    await collect();
    const kept = refs.filter((r) => r.deref() !== undefined).length;
    s.release();
    await eventually(() => live.state === "resolved");
    expect(kept).toBeLessThan(10);
  });
});
