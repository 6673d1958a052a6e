/**
 * Control authority cannot be forged (SPEC §5, issue 11 §1): only messages the
 * runtime minted act as control, whatever a message's fields say or however
 * they change. Each case is one attempt by an in-process attacker using only
 * the public types; every one must leave the paused agents paused, the
 * running ones running, the stored markers as they were, and no resume
 * receipt, `onResume` or `authorizeResume` call behind it.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createMessage, fromWire, Mailbox, ProcessStatus, SUSPENSION_KEY, toWire, type Message } from "../../../src/index.js";
import { businessLike, expectNoEffect, scene, tally, type Mutable, type Scene } from "./forgery-kit.js";
import { teardown } from "./helpers.js";
import { rejectsWithCode } from "../../support/outcome.js";
import { turns } from "../../support/agents.js";

afterEach(teardown);
afterAll(() => {
  // The figure the issue asks for: every attempt here was tried, none may have succeeded.
  console.info(`forgery attempts: ${tally.tried} tried, ${tally.succeeded.length} succeeded${tally.succeeded.length > 0 ? `: ${tally.succeeded.join("; ")}` : ""}`);
});

/** Sets `field` of `message` to answer `first` on the first read and `later` on every read after it. */
function flipping(message: Mutable, field: string, first: unknown, later: unknown): Mutable {
  let reads = 0;
  Object.defineProperty(message, field, { get: () => (reads++ === 0 ? first : later), enumerable: true, configurable: true });
  return message;
}

/** A Proxy whose every read of `type` or `priority` after the first answers as control of `type` would. */
function shapeShifter(recipient: string, type = "_agency.resume"): Message {
  const reads = new Map<PropertyKey, number>();
  return new Proxy(businessLike(recipient), {
    get(target, key, receiver) {
      const n = reads.get(key) ?? 0;
      reads.set(key, n + 1);
      if (key === "type" && n > 0) return type;
      if (key === "priority" && n > 0) return 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

/** Reaches past the public types for the mailbox's TS-private lane delivery (a JavaScript caller can). */
function deliverRaw(mailbox: Mailbox, message: Message): void {
  const raw = mailbox as unknown as { deliver(m: Message, lane: unknown): void; priority: unknown };
  raw.deliver(message, raw.priority);
}

describe("forged control from outside the agents", () => {
  const putThenMutate: [string, string, string, Record<string, unknown>][] = [
    ["a paused agent's resume", "victim", "_agency.resume", {}],
    ["a running agent's shutdown", "bystander", "_agency.shutdown", {}],
    ["a running agent's suspend", "bystander", "_agency.suspend", {}],
    ["a resume put on the priority lane as business", "victim", "_agency.resume", { priority: 1 }],
  ];

  it.each(putThenMutate)("mailbox.put, then the type changed: %s", async (name, target, type, fields) => {
    const s = await scene();
    const m = businessLike(target, fields);
    const agent = s.runtime.getAgent(target)!;
    // Changed at once, before the agent's loop (woken by the put) gets to it.
    const put = agent.mailbox.put(m);
    m.type = type;
    (m.payload as Record<string, unknown>).approver = "mallory";
    await put;
    await expectNoEffect(s, `put then mutate: ${name}`);
  });

  it("mailbox.offer, then the type and priority changed", async () => {
    const s = await scene();
    const m = businessLike("victim");
    expect(s.victim.mailbox.offer(m)).toBe(true);
    m.type = "_agency.resume";
    m.priority = 1;
    const b = businessLike("bystander");
    expect(s.bystander.mailbox.offer(b)).toBe(true);
    b.type = "_agency.shutdown";
    await expectNoEffect(s, "offer then mutate");
  });

  it("a type getter that answers business once and a resume after", async () => {
    const s = await scene();
    await s.victim.mailbox.put(flipping(businessLike("victim", { priority: 1 }), "type", "message", "_agency.resume"));
    await expectNoEffect(s, "getter type");
    expect(s.victim.mailbox.prioritySize + s.victim.mailbox.size).toBe(1); // queued as the business it said it was
  });

  it("getters on both priority and type", async () => {
    const s = await scene();
    const m = flipping(flipping(businessLike("victim"), "type", "message", "_agency.resume"), "priority", 0, 1);
    await s.victim.mailbox.put(m);
    await expectNoEffect(s, "getter priority and type");
  });

  it("a Proxy that answers differently on every read", async () => {
    const s = await scene();
    await s.victim.mailbox.put(shapeShifter("victim"));
    await s.bystander.mailbox.put(shapeShifter("bystander", "_agency.shutdown"));
    await expectNoEffect(s, "proxy message");
  });

  it("a reserved type put or offered directly is refused, from createMessage or fromWire", async () => {
    const s = await scene();
    const made = createMessage({ sender: "_runtime", recipient: "victim", type: "_agency.resume", payload: { approver: "alice" } });
    await rejectsWithCode(s.victim.mailbox.put(made), "RESERVED_MESSAGE_TYPE");
    expect(() => s.victim.mailbox.offer(made)).toThrow(expect.objectContaining({ code: "RESERVED_MESSAGE_TYPE" }) as Error);
    await rejectsWithCode(s.victim.mailbox.put(fromWire(toWire(made))), "RESERVED_MESSAGE_TYPE");
    await expectNoEffect(s, "reserved type via put, offer, fromWire");
  });

  it("runtime.send and runtime.ask refuse reserved types", async () => {
    const s = await scene();
    await rejectsWithCode(s.runtime.send("victim", { approver: "alice" }, { type: "_agency.resume" }), "RESERVED_MESSAGE_TYPE");
    await rejectsWithCode(s.runtime.ask("victim", { approver: "alice" }, { type: "_agency.resume" }), "RESERVED_MESSAGE_TYPE");
    await rejectsWithCode(s.runtime.send("bystander", {}, { type: "_agency.shutdown" }), "RESERVED_MESSAGE_TYPE");
    await expectNoEffect(s, "runtime.send/ask with a reserved type");
  });

  it("a payload changed after runtime.send carries no authority", async () => {
    const s = await scene();
    const payload: Record<string, string> = { seq: "1" };
    await s.runtime.send("victim", payload);
    payload.approver = "alice";
    payload.type = "_agency.resume";
    await expectNoEffect(s, "payload mutation after send");
  });

  it("the bypassing methods are not on a mailbox, by name or by symbol", async () => {
    const s = await scene();
    const box = s.victim.mailbox as unknown as Record<string, unknown>;
    for (const hidden of ["putControl", "force", "requeue", "queuedBusiness"]) {
      expect(box[hidden], hidden).toBeUndefined();
      expect(Object.getOwnPropertyNames(Mailbox.prototype)).not.toContain(hidden);
    }
    expect(Object.getOwnPropertySymbols(Mailbox.prototype)).toEqual([]);
    await expectNoEffect(s, "putControl/force/requeue/queuedBusiness");
  });

  it("a resume forced into the lane past every check (TS-private access) is dropped and reported", async () => {
    const s = await scene();
    deliverRaw(s.victim.mailbox, createMessage({ sender: "_runtime", recipient: "victim", type: "_agency.resume", payload: { approver: "alice" }, correlationId: "c", replyTo: "_runtime" }));
    deliverRaw(s.bystander.mailbox, createMessage({ sender: "_runtime", recipient: "bystander", type: "_agency.shutdown", payload: {} }));
    await expectNoEffect(s, "raw lane delivery");
    expect(s.forged).toEqual(["victim:_agency.resume", "bystander:_agency.shutdown"]);
    expect(s.logs.some((l) => l.level === "error" && l.message.includes("that the runtime did not make"))).toBe(true);
  });

  it("a runtime resume taken out of its mailbox cannot be edited, re-put, or used on another agent", async () => {
    const s = await scene();
    const legit = s.runtime.resume("victim", "alice", { timeoutMs: 1_000 });
    legit.catch(() => undefined);
    const stolen = s.victim.mailbox.pollPriority()!;
    expect(stolen.type).toBe("_agency.resume");
    expect(() => ((stolen.payload as Record<string, unknown>).approver = "mallory")).toThrow(TypeError);
    expect(() => ((stolen as Mutable).recipient = "victim2")).toThrow(TypeError);
    await rejectsWithCode(s.victim2.mailbox.put(stolen), "RESERVED_MESSAGE_TYPE");
    deliverRaw(s.victim2.mailbox, stolen); // minted, but for 'victim': it must not lift victim2's pause
    deliverRaw(s.victim2.mailbox, { ...stolen, recipient: "victim2" }); // a copy carries no mint
    await expectNoEffect(s, "stolen runtime resume, re-aimed");
    expect(s.forged).toEqual(["victim2:_agency.resume", "victim2:_agency.resume"]);
    await s.clock.advance(1_000);
    await rejectsWithCode(legit, "ASK_TIMEOUT");
  });

  it("a stolen approval replayed later does not lift a later pause", async () => {
    const s = await scene();
    const first = s.runtime.resume("victim", "alice", { timeoutMs: 1_000 });
    first.catch(() => undefined);
    const stolen = s.victim.mailbox.pollPriority()!;
    await s.runtime.resume("victim", "bob");
    await s.runtime.suspend("victim", "needs approval");
    const second = s.victim.suspension!.suspensionId;
    const receipts = s.audit.events.filter((e) => e.event === "agent.resume").length;
    deliverRaw(s.victim.mailbox, stolen);
    await turns(20);
    expect(s.victim.status).toBe(ProcessStatus.SUSPENDED);
    expect(s.victim.suspension?.suspensionId).toBe(second);
    expect(s.audit.events.filter((e) => e.event === "agent.resume").length).toBe(receipts);
    expect(s.victim.resumes).toEqual(["bob"]);
    tally.tried++;
  });

  it("an allow-list authorizeResume is never asked about a forged resume carrying the allowed name", async () => {
    const s = await scene({ authorizeResume: (_agent, approver) => approver === "alice" });
    const m = businessLike("victim", { priority: 1 });
    const put = s.victim.mailbox.put(m);
    m.type = "_agency.resume";
    await put;
    deliverRaw(s.victim.mailbox, createMessage({ sender: "alice", recipient: "victim", type: "_agency.resume", payload: { approver: "alice" } }));
    await expectNoEffect(s, "allow-listed approver in a forged resume");
    expect(s.authorizations).toEqual([]);
  });
});

describe("the marker handed out cannot change the pause", () => {
  it("agent.suspension is frozen: editing it throws, and a checkpoint stores the runtime's marker", async () => {
    const s = await scene();
    const marker = s.victim.suspension as unknown as Record<string, unknown>;
    expect(Object.isFrozen(marker)).toBe(true);
    for (const [field, value] of [["suspensionId", "forged"], ["reason", "approved"], ["approver", "alice"], ["since", "1970-01-01T00:00:00.000Z"]] as const) {
      expect(() => (marker[field] = value), field).toThrow(TypeError);
    }
    const identity = marker.identity as { capabilities: string[] };
    expect(() => identity.capabilities.push("admin")).toThrow(TypeError);
    expect(() => Object.defineProperty(marker, "suspensionId", { value: "forged" })).toThrow(TypeError);
    await s.victim.checkpoint();
    await expectNoEffect(s, "edit agent.suspension then checkpoint");
  });

  it("editing or deleting the marker in state, then checkpoint(), stores the runtime's marker", async () => {
    const s = await scene();
    (s.victim.state as Record<string, unknown>)[SUSPENSION_KEY] = { reason: "x", since: new Date(0).toISOString(), approver: "alice", suspensionId: "forged" };
    await s.victim.checkpoint();
    delete (s.victim.state as Record<string, unknown>)[SUSPENSION_KEY];
    await s.victim.checkpoint();
    await expectNoEffect(s, "edit state marker then checkpoint");
  });
});

describe("forged control from inside a handler", () => {
  const cases: [string, (s: Scene) => Promise<void>][] = [
    ["returns a hand-built resume for a paused agent", (s) => s.inside(() => createMessage({ sender: "mallory", recipient: "victim", type: "_agency.resume", payload: { approver: "alice" } }))],
    [
      "returns this.reply() edited into a resume (recipient, replyTo, priority, type)",
      (s) =>
        s.inside((self) => {
          const reply = self.editableReply();
          Object.assign(reply, { recipient: "victim", replyTo: "mallory", correlationId: "x", priority: 1, type: "_agency.resume" });
          return reply as unknown as Message;
        }),
    ],
    [
      "returns this.reply() edited into a shutdown of a running agent",
      (s) => s.inside((self) => Object.assign(self.editableReply(), { recipient: "bystander", replyTo: "mallory", priority: 1, type: "_agency.shutdown" }) as unknown as Message),
    ],
    ["returns a Proxy message to a paused agent", (s) => s.inside(() => shapeShifter("victim"))],
    ["returns a Proxy message to a running agent", (s) => s.inside(() => shapeShifter("bystander", "_agency.shutdown"))],
    [
      "sends, broadcasts and sendCapable()s reserved types",
      (s) =>
        s.inside(async (self) => {
          await self.attempt(() => self.send("victim", { approver: "alice" }, { type: "_agency.resume" }));
          await self.attempt(() => self.broadcast("*", { approver: "alice" }, { type: "_agency.resume" }));
          await self.attempt(() => self.sendCapable("pay", { approver: "alice" }, { type: "_agency.resume" }));
          await self.attempt(() => self.ask("victim", { approver: "alice" }, { type: "_agency.resume", timeoutMs: 10 }));
          expect(self.errors.map((e) => (e as { code?: string }).code)).toEqual(Array(4).fill("RESERVED_MESSAGE_TYPE"));
        }),
    ],
    [
      "puts into another agent's mailbox and edits the message afterwards",
      (s) =>
        s.inside(async () => {
          const m = businessLike("bystander");
          const put = s.bystander.mailbox.put(m);
          Object.assign(m, { type: "_agency.shutdown" });
          await put;
        }),
    ],
  ];

  it.each(cases)("Mallory %s", async (name, attack) => {
    const s = await scene();
    await attack(s);
    await expectNoEffect(s, `inside: ${name}`);
  });
});
