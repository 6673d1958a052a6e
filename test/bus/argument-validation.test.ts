/**
 * Bad arguments to send, ask, broadcast and sendCapable are refused with a
 * CivitasError (never a raw TypeError), before anything moves.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import type { Message } from "civitas-ts";
import { createMessage, Mailbox } from "../../src/index.js";
import { turns } from "../runtime/fixtures.js";
import { codeOf, outcome } from "../support/outcome.js";
import { whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { Sink, Doer, Stuck } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return "resolved";
}

function msg(n: number, extra: Partial<Parameters<typeof createMessage>[0]> = {}): Message {
  return createMessage({ sender: "t", recipient: "box", payload: { n }, ...extra });
}

describe("a message type that is not a string", () => {
  it("an agent's send/ask with a non-string type rejects with a CivitasError, not a TypeError", async () => {
    const sink = new Sink("sink");
    const doer = new Doer("doer");
    const rt = await whenStarted(supervised([sink, doer]));
    const codes: string[] = [];
    for (const type of [42, null, {}]) {
      doer.fn = async (self) => self.send("sink", { a: 1 }, { type: type as unknown as string });
      codes.push(String((await rt.ask("doer", {})).payload.code));
      doer.fn = async (self) => self.ask("sink", { a: 1 }, { type: type as unknown as string, timeoutMs: 50 });
      codes.push(String((await rt.ask("doer", {})).payload.code));
    }
    expect(codes).toEqual(Array(6).fill("INVALID_ARGUMENT"));
    expect(sink.seen).toHaveLength(0);
  });

  it("runtime.send/ask with a non-string type rejects with a CivitasError, not a TypeError", async () => {
    const sink = new Sink("sink");
    const rt = await whenStarted(supervised([sink]));
    const send = await outcome(rt.send("sink", { a: 1 }, { type: 42 as unknown as string }), 200);
    const ask = await outcome(rt.ask("sink", { a: 1 }, { type: null as unknown as string, timeoutMs: 50 }), 200);
    expect(send !== "pending" && !send.ok && codeOf(send.error)).toBe("INVALID_ARGUMENT");
    expect(ask !== "pending" && !ask.ok && codeOf(ask.error)).toBe("INVALID_ARGUMENT");
    expect(sink.seen).toHaveLength(0);
  });
});

describe("broadcast / sendCapable with bad input", () => {
  it("broadcast with a non-string pattern rejects with a CivitasError, not a TypeError", async () => {
    const doer = new Doer("doer");
    const rt = await whenStarted(supervised([doer, new Sink("s1")]));
    doer.fn = async (self) => self.broadcast(42 as unknown as string, { a: 1 });
    const reply = await rt.ask("doer", {});
    expect(reply.payload.code).toBe("INVALID_ARGUMENT");
  });

  it("sendCapable with a bad ttlMs rejects before moving the round-robin cursor", async () => {
    const a = new Sink("a", { capabilities: ["cap"] });
    const b = new Sink("b", { capabilities: ["cap"] });
    const doer = new Doer("doer");
    const rt = await whenStarted(supervised([a, b, doer]));
    doer.fn = async (self) => self.sendCapable("cap", { n: 1 }, { ttlMs: -1 });
    expect((await rt.ask("doer", {})).payload.code).toBe("INVALID_ARGUMENT");
    doer.fn = async (self) => self.sendCapable("cap", { n: 2 });
    expect((await rt.ask("doer", {})).payload.ok).toBe(true);
    await until(() => a.seen.length + b.seen.length === 1);
    // nothing changed by the refused call: round-robin starts at the first capable agent
    expect(a.seen.map((m) => m.payload.n)).toEqual([2]);
  });
});

describe("a signal that is not an AbortSignal", () => {
  it("runtime.ask with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const rt = await whenStarted(supervised([new Sink("s")]));
    const error = await errorOf(rt.ask("s", {}, { signal: null as unknown as AbortSignal, timeoutMs: 100 }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("runtime.send waiting on a full mailbox with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const s = new Stuck("s", { mailboxSize: 1 });
    const rt = await whenStarted(supervised([s]));
    await rt.send("s", {}); // being handled
    await turns();
    await rt.send("s", {}); // fills the lane
    const error = await errorOf(rt.send("s", {}, { signal: {} as AbortSignal }));
    s.release();
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("Mailbox.put on a full lane with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const box = new Mailbox({ capacity: 1 });
    await box.put(msg(1));
    const error = await errorOf(box.put(msg(2), { signal: {} as AbortSignal }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });

  it("Mailbox.get on an empty mailbox with a signal that is not an AbortSignal rejects with a CivitasError", async () => {
    const box = new Mailbox({ capacity: 1 });
    const error = await errorOf(box.get({ signal: {} as AbortSignal }));
    expect(codeOf(error)).toBe("INVALID_ARGUMENT");
  });
});
