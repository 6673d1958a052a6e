import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/errors/errors.js";
import { buildMessage, createMessage, isExpired, isReply, nextAttempt, type Message } from "../../src/message/message.js";
import {
  DEFAULT_MESSAGE_TYPE,
  isReservedType,
  priorityOf,
  REPLY_MESSAGE_TYPE,
  SYSTEM_MESSAGE_TYPES,
} from "../../src/message/system-types.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const base = { sender: "alice", recipient: "bob", payload: { n: 1 } };

/** What createMessage throws for `base` with `field` set to `value` (undefined when it accepts it). */
function refusal(field: string, value: unknown): unknown {
  try {
    createMessage({ ...base, [field]: value });
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("createMessage", () => {
  it("fills in defaults", () => {
    const before = Date.now();
    const m = createMessage(base);
    const after = Date.now();
    expect(m.type).toBe("message");
    expect(DEFAULT_MESSAGE_TYPE).toBe("message");
    expect(m.sender).toBe("alice");
    expect(m.recipient).toBe("bob");
    expect(m.payload).toEqual({ n: 1 });
    expect(m.attempt).toBe(0);
    expect(m.priority).toBe(0);
    expect(m.id).toMatch(UUID_V7);
    expect(m.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(m.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(m.timestamp).toBeGreaterThanOrEqual(before);
    expect(m.timestamp).toBeLessThanOrEqual(after);
    // optional fields are absent, not present-and-undefined
    for (const key of ["correlationId", "replyTo", "parentSpanId", "traceFlags", "ttlMs"]) expect(key in m).toBe(false);
  });

  it("derives the id's time from the message timestamp", () => {
    const m = createMessage({ ...base, timestamp: 1_700_000_000_123 });
    expect(Number.parseInt(m.id.slice(0, 8) + m.id.slice(9, 13), 16)).toBe(1_700_000_000_123);
  });

  it("keeps every field it is given", () => {
    const init = {
      ...base,
      id: "0190a0b0-0000-7000-8000-000000000000",
      type: "quote.request",
      correlationId: "c-1",
      replyTo: "carol",
      timestamp: 42,
      traceId: "a".repeat(32),
      spanId: "b".repeat(16),
      parentSpanId: "c".repeat(16),
      attempt: 2,
      priority: 3,
      ttlMs: 500,
    };
    expect(createMessage(init)).toEqual(init);
  });

  it("gives every message a fresh id, trace id and span id", () => {
    const a = createMessage(base);
    const b = createMessage(base);
    expect(a.id).not.toBe(b.id);
    expect(a.traceId).not.toBe(b.traceId);
    expect(a.spanId).not.toBe(b.spanId);
  });

  it.each([
    ["_agency.shutdown", 1],
    ["_agency.heartbeat", 1],
    ["_agency.heartbeat_ack", 1],
    ["_agency.restart", 1],
    ["_agency.register", 1],
    ["_agency.deregister", 1],
    ["_agency.suspend", 1],
    ["_agency.resume", 1],
    ["civitas.eval.halt", 1],
    ["civitas.eval.correction", 0],
    ["message", 0],
    ["reply", 0],
    ["agency.suspend", 0],
    ["civitas.eval.halt.later", 0],
  ])("gives type %s priority %i", (type, priority) => {
    expect(createMessage({ ...base, type }).priority).toBe(priority);
    expect(priorityOf(type)).toBe(priority);
  });

  it("keeps traceFlags 0 (not sampled) and 1 (sampled) as given", () => {
    expect(createMessage({ ...base, traceFlags: 0 }).traceFlags).toBe(0);
    expect(createMessage({ ...base, traceFlags: 1 }).traceFlags).toBe(1);
  });

  it("lets an explicit priority override the type's", () => {
    expect(createMessage({ ...base, type: "_agency.suspend", priority: 0 }).priority).toBe(0);
    expect(createMessage({ ...base, type: "work", priority: 2 }).priority).toBe(2);
  });

  it.each([
    ["ttlMs", -1],
    ["ttlMs", 1.5],
    ["attempt", -1],
    ["attempt", Number.NaN],
    ["priority", -1],
    ["priority", 0.5],
    ["priority", Number.POSITIVE_INFINITY],
    ["timestamp", -1],
    ["timestamp", Number.NaN],
    ["timestamp", Number.POSITIVE_INFINITY],
    ["traceFlags", -1],
    ["traceFlags", 256],
    ["traceFlags", 0.5],
  ])("refuses %s = %s with INVALID_ARGUMENT", (field, value) => {
    const caught = refusal(field, value);
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as InvalidArgumentError).code).toBe("INVALID_ARGUMENT");
    expect((caught as InvalidArgumentError).argument).toBe(field);
    expect((caught as Error).message).toContain(String(value));
  });

  it.each<[string, unknown]>([
    ["sender", ""],
    ["sender", 5],
    ["recipient", ""],
    ["recipient", null],
    ["type", 42],
    ["type", {}],
    ["correlationId", 7],
    ["replyTo", ["bob"]],
    ["id", ""],
    ["traceId", ""],
    ["spanId", 0],
    ["parentSpanId", ""],
  ])("refuses %s = %j, which the wire form could not carry, with INVALID_ARGUMENT", (field, value) => {
    const caught = refusal(field, value);
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect((caught as InvalidArgumentError).argument).toBe(field);
    expect((caught as Error).message).toContain(field);
  });

  it("refuses a missing init with INVALID_ARGUMENT, not a TypeError", () => {
    expect(() => createMessage(undefined as unknown as typeof base)).toThrow(InvalidArgumentError);
  });

  it("accepts an empty type, correlationId and replyTo, as the wire form does", () => {
    const m = createMessage({ ...base, type: "", correlationId: "", replyTo: "" });
    expect([m.type, m.correlationId, m.replyTo]).toEqual(["", "", ""]);
  });

  it("accepts zero for ttlMs, attempt, priority and timestamp", () => {
    const m = createMessage({ ...base, ttlMs: 0, attempt: 0, priority: 0, timestamp: 0 });
    expect([m.ttlMs, m.attempt, m.priority, m.timestamp]).toEqual([0, 0, 0, 0]);
    expect(m.id.startsWith("00000000-0000-7")).toBe(true);
  });

  it("buildMessage skips the payload check but not the field checks", () => {
    const payload = { when: new Date(0) } as unknown as Message["payload"];
    expect(buildMessage({ ...base, payload }).payload).toBe(payload);
    expect(() => buildMessage({ ...base, attempt: -1 })).toThrow(InvalidArgumentError);
  });
});

describe("isReply", () => {
  it("is true for a message with a correlationId and no replyTo", () => {
    expect(isReply(createMessage({ ...base, correlationId: "c" }))).toBe(true);
  });

  it("is false for a request (correlationId and replyTo) and for a plain message", () => {
    expect(isReply(createMessage({ ...base, correlationId: "c", replyTo: "alice" }))).toBe(false);
    expect(isReply(createMessage(base))).toBe(false);
    expect(isReply(createMessage({ ...base, replyTo: "alice" }))).toBe(false);
  });
});

describe("isExpired", () => {
  it("never expires a message without ttlMs", () => {
    const m = createMessage({ ...base, timestamp: 0 });
    expect(isExpired(m, Number.MAX_SAFE_INTEGER)).toBe(false);
  });

  it("expires once the age exceeds ttlMs, not when it equals it", () => {
    const m = createMessage({ ...base, timestamp: 1_000, ttlMs: 100 });
    expect(isExpired(m, 1_000)).toBe(false);
    expect(isExpired(m, 1_100)).toBe(false);
    expect(isExpired(m, 1_101)).toBe(true);
  });

  it("with ttlMs 0, expires as soon as any time has passed", () => {
    const m = createMessage({ ...base, timestamp: 50, ttlMs: 0 });
    expect(isExpired(m, 50)).toBe(false);
    expect(isExpired(m, 51)).toBe(true);
  });
});

describe("nextAttempt", () => {
  it("returns a copy with attempt + 1 and everything else unchanged", () => {
    const m = createMessage({ ...base, correlationId: "c", ttlMs: 10 });
    const retry = nextAttempt(m);
    expect(retry).not.toBe(m);
    expect(retry.attempt).toBe(1);
    expect(m.attempt).toBe(0);
    expect({ ...retry, attempt: 0 }).toEqual(m);
    expect(nextAttempt(nextAttempt(retry)).attempt).toBe(3);
    expect(nextAttempt(retry).id).toBe(m.id);
  });
});

describe("system message types", () => {
  it("lists exactly the reserved types of the spec, frozen", () => {
    expect([...SYSTEM_MESSAGE_TYPES].sort()).toEqual(
      [
        "_agency.shutdown",
        "_agency.heartbeat",
        "_agency.heartbeat_ack",
        "_agency.restart",
        "_agency.register",
        "_agency.deregister",
        "_agency.suspend",
        "_agency.resume",
        "civitas.eval.halt",
        "civitas.eval.correction",
      ].sort(),
    );
    expect(Object.isFrozen(SYSTEM_MESSAGE_TYPES)).toBe(true);
    expect(REPLY_MESSAGE_TYPE).toBe("reply");
  });

  it("reserves every _agency.* type for the runtime and nothing else", () => {
    for (const type of SYSTEM_MESSAGE_TYPES) expect(isReservedType(type)).toBe(type.startsWith("_agency."));
    expect(isReservedType("_agency.anything")).toBe(true);
    expect(isReservedType("civitas.eval.halt")).toBe(false);
    expect(isReservedType("agency.suspend")).toBe(false);
    expect(isReservedType("message")).toBe(false);
  });

  it("never throws for a type that is not a string: it is not reserved and travels on the business lane", () => {
    for (const type of [42, null, undefined, {}, ["_agency.shutdown"]]) {
      expect(isReservedType(type as string)).toBe(false);
      expect(priorityOf(type as string)).toBe(0);
    }
  });
});
