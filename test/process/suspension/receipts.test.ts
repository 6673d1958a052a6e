import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  Runtime,
  silentLogger,
  SUSPENSION_KEY,
  type AuditEvent,
  type AuditSink,
  type Logger,
  type SuspensionMarker,
} from "../../../src/index.js";
import { whenStarted } from "../../support/runtimes.js";

/** An audit sink that refuses events of the given kinds. */
class RefusingSink implements AuditSink {
  readonly recorded: AuditEvent[] = [];
  constructor(private readonly refuse: ReadonlySet<string>) {}
  emit(event: AuditEvent): Promise<void> {
    if (this.refuse.has(event.event)) return Promise.reject(new Error(`disk full (${event.event})`));
    this.recorded.push(event);
    return Promise.resolve();
  }
}

function capturingLogger(lines: string[]): Logger {
  const push = (message: string): void => void lines.push(message);
  return { debug: push, info: push, warn: push, error: push };
}

class Approvable extends AgentProcess {
  resumedBy: string[] = [];
  override async onResume(approver: string): Promise<void> {
    this.resumedBy.push(approver);
  }
}

describe("receipts before effects", () => {
  it("refuses a resume whose agent.resume receipt cannot be recorded (AUDIT_UNAVAILABLE): it stays SUSPENDED", async () => {
    const store = new InMemoryStateStore();
    const agent = new Approvable("payer");
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: silentLogger, store, auditSink: new RefusingSink(new Set(["agent.resume"])) }));
    try {
      await runtime.suspend("payer", "approve");
      await expect(runtime.resume("payer", "alice")).rejects.toMatchObject({ name: "AuditUnavailableError", code: "AUDIT_UNAVAILABLE", agent: "payer" });
      expect(agent.status).toBe(ProcessStatus.SUSPENDED);
      expect(agent.resumedBy).toEqual([]);
      expect((await store.get("payer"))?.[SUSPENSION_KEY]).toBeDefined();
    } finally {
      await runtime.stop();
    }
  });

  it("still suspends when the agent.suspend receipt cannot be recorded, and reports the failure", async () => {
    const lines: string[] = [];
    const agent = new Approvable("payer");
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: capturingLogger(lines), auditSink: new RefusingSink(new Set(["agent.suspend"])) }));
    try {
      await runtime.suspend("payer", "approve");
      expect(agent.status).toBe(ProcessStatus.SUSPENDED);
      expect(lines.some((l) => l.includes("audit") && l.includes("failed"))).toBe(true);
    } finally {
      await runtime.stop();
    }
  });
});

describe("resume bound to what was approved", () => {
  class Versioned extends AgentProcess {
    static version = "1.0.0";
  }

  it("records the class version and sorted capabilities in the marker", async () => {
    const agent = new Versioned("v", { capabilities: ["refund", "pay"] });
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: silentLogger }));
    try {
      await runtime.suspend("v", "check");
      expect(agent.suspension?.identity).toEqual({ version: "1.0.0", capabilities: ["pay", "refund"] });
    } finally {
      await runtime.stop();
    }
  });

  it("refuses a resume after a deploy changed the version (IDENTITY_CHANGED) unless the change is accepted, and records it", async () => {
    const store = new InMemoryStateStore();
    const first = await whenStarted(new Runtime({ root: [new Versioned("v", { capabilities: ["pay"] })], logger: silentLogger, store }));
    await first.suspend("v", "check");
    await first.stop();

    class Deployed extends AgentProcess {
      static version = "2.0.0";
    }
    const audit = new MemoryAuditSink();
    const agent = new Deployed("v", { capabilities: ["pay"] });
    const second = await whenStarted(new Runtime({ root: [agent], logger: silentLogger, store, auditSink: audit }));
    try {
      expect(agent.status).toBe(ProcessStatus.SUSPENDED);
      await expect(second.resume("v", "alice")).rejects.toMatchObject({ code: "IDENTITY_CHANGED", agent: "v" });
      expect(agent.status).toBe(ProcessStatus.SUSPENDED);
      expect(audit.ofType("agent.resume")).toEqual([]);
      await second.resume("v", "alice", { acceptIdentityChange: true });
      expect(agent.status).toBe(ProcessStatus.RUNNING);
      expect(audit.ofType("agent.resume")[0]?.details.identityChange).toEqual({
        from: { version: "1.0.0", capabilities: ["pay"] },
        to: { version: "2.0.0", capabilities: ["pay"] },
      });
    } finally {
      await second.stop();
    }
  });

  it("refuses a resume after the capability set was narrowed while parked", async () => {
    const store = new InMemoryStateStore();
    const first = await whenStarted(new Runtime({ root: [new Versioned("v", { capabilities: ["pay", "refund"] })], logger: silentLogger, store }));
    await first.suspend("v", "check");
    await first.stop();
    const second = await whenStarted(new Runtime({ root: [new Versioned("v", { capabilities: ["pay"] })], logger: silentLogger, store }));
    try {
      const error = await second.resume("v", "alice").then(() => undefined, (e: unknown) => e as Error & { code: string });
      expect(error?.code).toBe("IDENTITY_CHANGED");
      expect(error?.message).toContain("[pay, refund]");
    } finally {
      await second.stop();
    }
  });

  it("reads markers written before identities were recorded, and resumes them", async () => {
    const store = new InMemoryStateStore();
    const legacy: SuspensionMarker = { reason: "old", since: "2026-01-01T00:00:00.000Z", approver: null, suspensionId: "legacy-1" };
    await store.set("v", { [SUSPENSION_KEY]: { reason: "old", since: "2026-01-01T00:00:00.000Z", approver: null, suspensionId: "legacy-1" } });
    const agent = new Versioned("v");
    const runtime = await whenStarted(new Runtime({ root: [agent], logger: silentLogger, store }));
    try {
      expect(agent.suspension).toEqual(legacy);
      await runtime.resume("v", "alice", { suspensionId: "legacy-1" });
      expect(agent.status).toBe(ProcessStatus.RUNNING);
    } finally {
      await runtime.stop();
    }
  });
});
