import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  MemoryAuditSink,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  type AuditEvent,
  type AuditSink,
  type Logger,
  type Message,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { Echo, eventually } from "../runtime/fixtures.js";
import { whenStarted } from "../support/runtimes.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const runtimes: Runtime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

/** Crashes (escalates) on a message of type "crash"; replies otherwise. */
class Crashy extends AgentProcess {
  override async handle(message: Message): Promise<Message> {
    if (message.type === "crash") throw new Error("boom");
    return this.reply({ ok: true });
  }
}

function summary(events: readonly AuditEvent[], agent: string): string[] {
  return events.filter((e) => e.agent === agent).map((e) => e.event);
}

describe("audit events", () => {
  it("records agent.start, agent.crash, agent.restart and agent.stop, with ISO-8601 times and the signer", async () => {
    const clock = new TestClock(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
    const sink = new MemoryAuditSink();
    const crashy = new Crashy("crashy");
    const rt = new Runtime({
      root: new Supervisor("sup", { children: [crashy], backoffBaseMs: 0 }),
      auditSink: sink,
      signerId: "node-7",
      clock,
      logger: silentLogger,
    });
    runtimes.push(rt);

    await rt.start();
    await clock.advance(1_000);
    await rt.send("crashy", {}, { type: "crash" });
    await eventually(() => crashy.incarnation === 2 && crashy.status === ProcessStatus.RUNNING, "the restart");
    await eventually(() => sink.ofType("agent.restart").length === 1, "the restart event");
    await rt.stop();

    expect(summary(sink.events, "crashy")).toEqual(["agent.start", "agent.crash", "agent.start", "agent.restart", "agent.stop"]);
    for (const event of sink.events) {
      expect(event.ts).toMatch(ISO_MS);
      expect(event.signerId).toBe("node-7");
    }
    const [firstStart, secondStart] = sink.ofType("agent.start", "crashy");
    expect(firstStart?.ts).toBe("2030-01-02T03:04:05.678Z");
    expect(firstStart?.details).toEqual({ incarnation: 1 });
    expect(secondStart?.ts).toBe("2030-01-02T03:04:06.678Z");
    expect(secondStart?.details).toEqual({ incarnation: 2 });

    const [crash] = sink.ofType("agent.crash", "crashy");
    expect(String(crash?.details.error)).toContain("boom");
    const [restart] = sink.ofType("agent.restart", "crashy");
    expect(restart?.details).toMatchObject({ supervisor: "sup", strategy: "ONE_FOR_ONE", crashed: "crashy", incarnation: 2 });
    const [stop] = sink.ofType("agent.stop", "crashy");
    expect(stop?.details).toEqual({ reason: "stopped" });
  });

  it("uses signerId 'civitas-runtime' by default", async () => {
    const sink = new MemoryAuditSink();
    const rt = new Runtime({ root: [new Echo("echo")], auditSink: sink, logger: silentLogger });
    runtimes.push(rt);
    await rt.start();
    await rt.stop();
    expect(sink.events.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sink.events.map((e) => e.signerId))).toEqual(new Set(["civitas-runtime"]));
    expect(summary(sink.events, "echo")).toEqual(["agent.start", "agent.stop"]);
  });

  it("never closes or clears the sink it was given", async () => {
    const sink = new MemoryAuditSink();
    const rt = await whenStarted(new Runtime({ root: [new Echo("echo")], auditSink: sink, logger: silentLogger }));
    await rt.stop();
    const count = sink.events.length;
    sink.emit({ event: "after", ts: new Date(0).toISOString(), agent: "x", signerId: "s", details: {} });
    expect(sink.events).toHaveLength(count + 1);
  });
});

describe("a failing audit sink", () => {
  function capture(): { logger: Logger; errors: string[] } {
    const errors: string[] = [];
    return { logger: { ...silentLogger, error: (message) => errors.push(message) }, errors };
  }

  const failing: [string, () => AuditSink][] = [
    [
      "throws",
      () => ({
        emit: () => {
          throw new Error("disk full");
        },
      }),
    ],
    ["rejects", () => ({ emit: () => Promise.reject(new Error("disk full")) })],
    ["rejects later", () => ({ emit: () => new Promise<void>((_, reject) => setTimeout(() => reject(new Error("disk full")), 1)) })],
  ];

  it.each(failing)("whose emit %s does not break start, messaging, crash recovery or stop", async (_what, make) => {
    const { logger, errors } = capture();
    const crashy = new Crashy("crashy");
    const rt = new Runtime({
      root: new Supervisor("sup", { children: [new Echo("echo"), crashy], backoffBaseMs: 0 }),
      auditSink: make(),
      logger,
    });
    runtimes.push(rt);
    await rt.start();
    expect((await rt.ask("echo", { n: 1 })).payload).toEqual({ n: 1, from: "echo" });
    await rt.send("crashy", {}, { type: "crash" });
    await eventually(() => crashy.incarnation === 2 && crashy.status === ProcessStatus.RUNNING, "the restart");
    expect((await rt.ask("crashy", {})).payload).toEqual({ ok: true });
    await rt.stop();
    expect(crashy.status).toBe(ProcessStatus.STOPPED);
    await eventually(() => errors.filter((e) => e.startsWith("audit:")).length >= 5, "the sink failures to be logged");
  });
});
