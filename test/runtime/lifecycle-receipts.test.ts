// start() and stop() resolve only once their audit receipts are recorded, and a
// crash's receipt is recorded before the restart (issue 11, section 5).
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, Supervisor, type AuditEvent, type AuditSink, type Logger, type Message } from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually, turns } from "./fixtures.js";
import { track, type Tracked } from "../support/outcome.js";

/** A sink that records an event only when the test lets it: `release()` records everything held. */
class HeldSink implements AuditSink {
  readonly recorded: AuditEvent[] = [];
  private held: (() => void)[] = [];
  private holding = true;
  constructor() {
    sinks.push(this);
  }
  /** Events emitted and not recorded yet. */
  get pending(): number {
    return this.held.length;
  }
  emit(event: AuditEvent): Promise<void> {
    if (!this.holding) {
      this.recorded.push(event);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.held.push(() => {
        this.recorded.push(event);
        resolve();
      });
    });
  }
  release(): void {
    const held = this.held;
    this.held = [];
    for (const record of held) record();
  }
  /** Records everything held, and from now on every event at once. */
  open(): void {
    this.holding = false;
    this.release();
  }
  of(event: string): string[] {
    return this.recorded.filter((e) => e.event === event).map((e) => e.agent);
  }
  /**
   * Waits until `count` events are held (`what`), checks that `call` is still
   * pending a few turns later (it waits for them), then records them.
   */
  async releaseOnceHeld(count: number, what: string, call: Tracked<unknown>): Promise<void> {
    await eventually(() => this.pending === count, what);
    await turns();
    expect(call.state).toBe("pending");
    this.release();
  }
}

class Echo extends AgentProcess {
  starts = 0;
  override async onStart(): Promise<void> {
    this.starts++;
  }
  override async handle(message: Message): Promise<Message> {
    if (message.payload.crash === true) throw new Error("crash on purpose");
    return this.reply(message.payload);
  }
}

const runtimes: Runtime[] = [];
const sinks: HeldSink[] = [];
afterEach(async () => {
  for (const sink of sinks.splice(0)) sink.open();
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

describe("lifecycle receipts", () => {
  it("start() resolves only once the agent.start receipts are recorded", async () => {
    const sink = new HeldSink();
    const rt = new Runtime({ root: [new Echo("a"), new Echo("b")], auditSink: sink, logger: silentLogger });
    runtimes.push(rt);
    const starting = track(rt.start());
    await sink.releaseOnceHeld(2, "both start receipts to be emitted", starting);
    await starting.promise;
    expect(sink.of("agent.start")).toEqual(["a", "b"]);
  });

  it("stop() resolves only once the agent.stop receipts are recorded", async () => {
    const sink = new HeldSink();
    const rt = new Runtime({ root: [new Echo("a"), new Echo("b")], auditSink: sink, logger: silentLogger });
    const starting = rt.start();
    await eventually(() => sink.pending === 2, "the start receipts");
    sink.release();
    await starting;
    const stopping = track(rt.stop());
    // Children stop one after the other, each once its receipt is recorded: b, then a.
    for (const agent of ["b", "a"]) await sink.releaseOnceHeld(1, `the stop receipt of ${agent} to be emitted`, stopping);
    await stopping.promise;
    expect(sink.of("agent.stop")).toEqual(["b", "a"]);
  });

  it("a crash's receipt is recorded before the supervisor restarts the agent", async () => {
    const sink = new HeldSink();
    const echo = new Echo("a");
    const rt = new Runtime({ root: new Supervisor("root", { children: [echo], backoffBaseMs: 0 }), auditSink: sink, logger: silentLogger });
    runtimes.push(rt);
    const starting = rt.start();
    await eventually(() => sink.pending === 1, "the start receipt");
    sink.release();
    await starting;
    const failed = track(rt.ask("a", { crash: true }));
    await eventually(() => sink.pending === 1, "the crash receipt to be emitted");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(echo.starts).toBe(1); // not restarted while the receipt is unrecorded
    expect(failed.state).toBe("pending"); // and the caller is told only once it is on record
    sink.release();
    await eventually(() => echo.starts === 2, "the restart");
    expect(sink.of("agent.crash")).toEqual(["a"]);
    await eventually(() => failed.state === "rejected", "the ask to fail");
    expect(failed.reason).toMatchObject({ name: "HandlerFailedError", code: "HANDLER_FAILED" });
    sink.release();
  });

  it("a sink that never records does not hold start() forever: it resolves after the agent's shutdownTimeoutMs (30 s), with a warning", async () => {
    const clock = new TestClock();
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
    const sink = new HeldSink();
    const rt = new Runtime({ root: [new Echo("a")], auditSink: sink, logger, clock, keepAlive: false });
    runtimes.push(rt);
    const starting = track(rt.start());
    await eventually(() => sink.pending === 1, "the start receipt");
    await clock.advance(29_999);
    await turns();
    expect(starting.state).toBe("pending");
    await clock.advance(1);
    await eventually(() => starting.state === "resolved", "start() to give up waiting");
    expect(warnings.some((w) => w.includes("did not record 'agent.start' of 'a' within 30000 ms"))).toBe(true);
    sink.release();
  });
});
