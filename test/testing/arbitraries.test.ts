import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, createMessage, fromWire, Mailbox, SYSTEM_MESSAGE_TYPES, toWire } from "../../src/index.js";
import {
  agentNameArbitrary,
  APPROVER_KINDS,
  isMessageCommand,
  jsonValueArbitrary,
  LIFECYCLE_COMMAND_KINDS,
  lifecycleCommandsArbitrary,
  messageArbitrary,
  payloadArbitrary,
  type LifecycleCommand,
} from "../../src/entries/testing.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function hasNegativeZero(value: unknown): boolean {
  if (Object.is(value, -0)) return true;
  if (typeof value !== "object" || value === null) return false;
  return Object.values(value).some(hasNegativeZero);
}

describe("payloadArbitrary / jsonValueArbitrary", () => {
  it("generates plain JSON objects that createMessage accepts and JSON round-trips unchanged", () => {
    fc.assert(
      fc.property(payloadArbitrary({ maxDepth: 3 }), (payload) => {
        expect(Object.getPrototypeOf(payload)).toBe(Object.prototype);
        expect(createMessage({ sender: "a", recipient: "b", payload }).payload).toBe(payload);
        expect(JSON.parse(JSON.stringify(payload))).toStrictEqual(payload);
        expect(hasNegativeZero(payload)).toBe(false);
        expect(Object.keys(payload)).not.toContain("__proto__");
      }),
      { numRuns: 300 },
    );
  });

  it("respects maxKeys and maxDepth", () => {
    const depth = (v: unknown): number => (typeof v === "object" && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0);
    fc.assert(
      fc.property(payloadArbitrary({ maxDepth: 1, maxKeys: 2 }), (payload) => {
        expect(Object.keys(payload).length).toBeLessThanOrEqual(2);
        expect(depth(payload)).toBeLessThanOrEqual(2);
      }),
    );
    fc.assert(
      fc.property(payloadArbitrary({ maxDepth: 0 }), (payload) => {
        expect(depth(payload)).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("jsonValueArbitrary yields every kind of JSON value", () => {
    const kinds = new Set(fc.sample(jsonValueArbitrary(), 500).map((v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v)));
    expect([...kinds].sort()).toEqual(["array", "boolean", "null", "number", "object", "string"]);
  });
});

describe("agentNameArbitrary", () => {
  it("generates names an agent accepts", () => {
    fc.assert(
      fc.property(agentNameArbitrary(), (name) => {
        expect(new AgentProcess(name).name).toBe(name);
      }),
    );
  });
});

describe("messageArbitrary", () => {
  it("generates valid messages: createMessage takes each one back unchanged, and so does the wire", () => {
    fc.assert(
      fc.property(messageArbitrary(), (message) => {
        expect(createMessage({ ...message })).toStrictEqual(message);
        expect(fromWire(toWire(message))).toStrictEqual(message);
      }),
      { numRuns: 300 },
    );
  });

  it("ids are UUIDv7 carrying the message's timestamp; trace ids are W3C ids; types are not reserved", () => {
    fc.assert(
      fc.property(messageArbitrary(), (m) => {
        expect(m.id).toMatch(UUID_V7);
        expect(Number.parseInt(m.id.replace(/-/g, "").slice(0, 12), 16)).toBe(m.timestamp);
        expect(m.traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(m.traceId).not.toMatch(/^0+$/);
        expect(m.spanId).toMatch(/^[0-9a-f]{16}$/);
        expect(m.type.startsWith("_agency.")).toBe(false);
        expect(Number.isInteger(m.priority) && m.priority >= 0).toBe(true);
        if (m.correlationId !== undefined) expect(m.correlationId).toMatch(UUID_V7);
        if (m.replyTo !== undefined) expect(m.correlationId).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });

  it("honours fixed sender, recipient and type, the lanes and the ttl policy", () => {
    const fixed = messageArbitrary({ sender: "alice", recipient: "bob", type: "task", priority: "business", ttl: "always", requests: false });
    fc.assert(
      fc.property(fixed, (m) => {
        expect([m.sender, m.recipient, m.type, m.priority]).toEqual(["alice", "bob", "task", 0]);
        expect(m.ttlMs).toBeGreaterThanOrEqual(0);
        expect(m.correlationId).toBeUndefined();
        expect(m.replyTo).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(messageArbitrary({ priority: "control", ttl: "never" }), (m) => {
        expect(m.priority >= 1 && m.ttlMs === undefined).toBe(true);
      }),
    );
    fc.assert(
      fc.property(messageArbitrary({ type: fc.constantFrom(...SYSTEM_MESSAGE_TYPES) }), (m) => {
        expect(SYSTEM_MESSAGE_TYPES).toContain(m.type);
      }),
    );
  });

  it("mixes lanes, ttl and request/reply by default", () => {
    const sample = fc.sample(messageArbitrary(), 400);
    expect(sample.some((m) => m.priority === 0) && sample.some((m) => m.priority > 0)).toBe(true);
    expect(sample.some((m) => m.ttlMs !== undefined) && sample.some((m) => m.ttlMs === undefined)).toBe(true);
    expect(sample.some((m) => m.replyTo !== undefined)).toBe(true);
    expect(sample.some((m) => m.correlationId !== undefined && m.replyTo === undefined)).toBe(true);
  });

  it("serves the docs' example: a mailbox hands business messages back in FIFO order", () => {
    fc.assert(
      fc.property(fc.array(messageArbitrary({ priority: "business", ttl: "never" })), (messages) => {
        const box = new Mailbox();
        for (const m of messages) box.offer(m);
        expect(box.drain()).toEqual(messages);
      }),
    );
  });

  it("replays from a seed: two runs with the same seed generate the same messages", () => {
    const run = (): unknown[] => fc.sample(messageArbitrary(), { seed: 42, numRuns: 20 });
    expect(run()).toEqual(run());
  });
});

/** Checks that a scenario is well-formed; returns the problems. */
function problems(commands: readonly LifecycleCommand[], shutdown: "never" | "last" | "anywhere"): string[] {
  const found: string[] = [];
  let next = 0;
  commands.forEach((c, i) => {
    if (!LIFECYCLE_COMMAND_KINDS.includes(c.kind)) found.push(`${i}: unknown kind ${c.kind}`);
    if (isMessageCommand(c) && c.id !== next++) found.push(`${i}: id ${c.id}, expected ${next - 1}`);
    if (!isMessageCommand(c) && "id" in c) found.push(`${i}: ${c.kind} has an id`);
    if ((c.kind === "suspend" || c.kind === "selfSuspend") && typeof c.reason !== "string") found.push(`${i}: reason`);
    if (c.kind === "resume" && !APPROVER_KINDS.includes(c.approver)) found.push(`${i}: approver ${String(c.approver)}`);
    if ((c.kind === "resume" || c.kind === "deny") && c.approver !== "valid" && c.bySuspensionId !== undefined) found.push(`${i}: bySuspensionId on ${c.approver}`);
    if (c.kind === "deny" && !APPROVER_KINDS.includes(c.approver)) found.push(`${i}: approver ${String(c.approver)}`);
    if (c.kind === "shutdown" && shutdown === "never") found.push(`${i}: shutdown`);
    if (c.kind === "shutdown" && shutdown === "last" && i !== commands.length - 1) found.push(`${i}: shutdown before the end`);
  });
  return found;
}

describe("lifecycleCommandsArbitrary", () => {
  it("generates well-formed scenarios: ids 0, 1, 2 … in order, a shutdown only at the end", () => {
    fc.assert(
      fc.property(lifecycleCommandsArbitrary(), (commands) => {
        expect(problems(commands, "last")).toEqual([]);
        expect(commands.filter((c) => c.kind !== "shutdown").length).toBeLessThanOrEqual(40);
      }),
      { numRuns: 300 },
    );
  });

  it("stays well-formed while shrinking", () => {
    const result = fc.check(
      fc.property(lifecycleCommandsArbitrary({ maxLength: 30 }), (commands) => {
        expect(problems(commands, "last")).toEqual([]);
        return commands.filter((c) => c.kind === "send").length < 3;
      }),
      { seed: 7 },
    );
    expect(result.failed).toBe(true);
    const counterexample = result.counterexample?.[0] ?? [];
    expect(problems(counterexample, "last")).toEqual([]);
    expect(counterexample.map((c) => c.kind)).toEqual(["send", "send", "send"]);
  });

  it("draws every kind and approver, and long scenarios", () => {
    const sample = fc.sample(lifecycleCommandsArbitrary(), 300);
    const kinds = new Set(sample.flat().map((c) => c.kind));
    expect([...kinds].sort()).toEqual([...LIFECYCLE_COMMAND_KINDS].sort());
    const approvers = new Set(sample.flat().flatMap((c) => (c.kind === "resume" ? [c.approver] : [])));
    expect([...approvers].sort()).toEqual([...APPROVER_KINDS].sort());
    expect(Math.max(...sample.map((s) => s.length))).toBeGreaterThan(30);
  });

  it("honours lengths, weights and the shutdown policy", () => {
    fc.assert(
      fc.property(lifecycleCommandsArbitrary({ minLength: 3, maxLength: 5, shutdown: "never", weights: { crash: 0, restart: 0, siblingCrash: 0 } }), (commands) => {
        expect(commands.length).toBeGreaterThanOrEqual(3);
        expect(commands.length).toBeLessThanOrEqual(5);
        expect(problems(commands, "never")).toEqual([]);
        expect(commands.some((c) => c.kind === "crash" || c.kind === "restart" || c.kind === "siblingCrash")).toBe(false);
      }),
    );
    fc.assert(
      fc.property(lifecycleCommandsArbitrary({ weights: { send: 1, ask: 0, selfSuspend: 0, crash: 0, suspend: 0, resume: 0, deny: 0, elapse: 0, siblingCrash: 0, restart: 0 }, shutdown: "never" }), (commands) => {
        expect(commands.every((c) => c.kind === "send")).toBe(true);
      }),
    );
    const anywhere = fc.sample(lifecycleCommandsArbitrary({ shutdown: "anywhere" }), 300);
    expect(anywhere.some((cs) => cs.some((c, i) => c.kind === "shutdown" && i < cs.length - 1))).toBe(true);
    for (const commands of anywhere) expect(problems(commands, "anywhere")).toEqual([]);
    const onlyStale = fc.sample(lifecycleCommandsArbitrary({ weights: { resume: 1, send: 0, ask: 0, selfSuspend: 0, crash: 0, suspend: 0, deny: 0, elapse: 0, siblingCrash: 0, restart: 0 }, approverWeights: { valid: 0, empty: 0, whitespace: 0 } }), 50);
    expect(onlyStale.flat().every((c) => c.kind === "shutdown" || (c.kind === "resume" && c.approver === "stale"))).toBe(true);
  });

  it("refuses options it cannot honour with RangeError", () => {
    expect(() => lifecycleCommandsArbitrary({ minLength: 5, maxLength: 2 })).toThrow(RangeError);
    expect(() => lifecycleCommandsArbitrary({ maxLength: -1 })).toThrow(RangeError);
    expect(() => lifecycleCommandsArbitrary({ weights: { send: -1 } })).toThrow(RangeError);
    expect(() => lifecycleCommandsArbitrary({ approverWeights: { valid: 0, empty: 0, whitespace: 0, stale: 0 } })).toThrow(/positive weight/);
    expect(() =>
      lifecycleCommandsArbitrary({ weights: { send: 0, ask: 0, selfSuspend: 0, crash: 0, suspend: 0, resume: 0, deny: 0, elapse: 0, siblingCrash: 0, restart: 0 } }),
    ).toThrow(/positive weight/);
  });
});
