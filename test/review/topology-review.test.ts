/**
 * Review of Runtime.fromTopology and of the Runtime's public API used from
 * outside the tree. Every test here pins a defect: it asserts what SPEC,
 * docs/topology.md or the TSDoc promise, and fails on the code as reviewed.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  AgentProcess,
  CivitasError,
  ProcessStatus,
  Runtime,
  Supervisor,
  TopologyError,
  silentLogger,
  type AgentProcessOptions,
  type Message,
} from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { eventually, track, turns } from "../runtime/fixtures.js";
import { caught } from "../support/outcome.js";

const runtimes: Runtime[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

class Worker extends AgentProcess {}

/** A class that is not an AgentProcess, as a registry typo could hold (e.g. a service class). */
class NotAnAgent {
  constructor(readonly name: string, readonly options?: AgentProcessOptions) {}
}

/** Expects a TopologyError (TOPOLOGY_INVALID) and returns it. */
function topologyError(fn: () => unknown): TopologyError {
  const error = caught(fn);
  expect(error, "expected a TopologyError").toBeInstanceOf(TopologyError);
  expect((error as TopologyError).code).toBe("TOPOLOGY_INVALID");
  return error as TopologyError;
}

describe("Runtime.fromTopology: mistakes that escape TOPOLOGY_INVALID", () => {
  it("an agent named 'root' at the top (wrapped in a supervisor named root) is refused with TOPOLOGY_INVALID at its name, not DUPLICATE_NAME", () => {
    const error = topologyError(() => Runtime.fromTopology({ agent: { name: "root", type: "Worker" } }, { agents: { Worker }, logger: silentLogger }));
    expect(error.path).toBe("topology.agent.name");
  });

  it.each([
    ["at the top", { agent: { name: "a", type: "NotAnAgent" } }, "topology.agent"],
    ["under a supervisor", { supervisor: { name: "s", children: [{ agent: { name: "a", type: "NotAnAgent" } }] } }, "topology.supervisor.children[0].agent"],
  ])("a registry class that is not an AgentProcess subclass (%s) is refused with TOPOLOGY_INVALID naming the agent entry", (_where, topology, at) => {
    const error = topologyError(() =>
      Runtime.fromTopology(topology, { agents: { NotAnAgent } as unknown as { NotAnAgent: typeof Worker }, logger: silentLogger }),
    );
    expect([`${at}.type`, "options.agents.NotAnAgent"]).toContain(error.path);
  });

  it("a YAML tag the topology format does not know is refused, and nothing is written to stderr behind the logger's back", () => {
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    // built or not, nothing is started: nothing to stop
    const error = caught(() => Runtime.fromTopology("agent: { name: a, type: !Agent Worker }", { agents: { Worker }, logger: silentLogger, keepAlive: false }));
    expect(warn).not.toHaveBeenCalled();
    expect(error).toBeInstanceOf(TopologyError);
  });

  it("a deeply nested topology object is refused with a CivitasError, not a raw RangeError", () => {
    let node: object = { agent: { name: "leaf", type: "Worker" } };
    for (let i = 0; i < 3000; i++) node = { supervisor: { name: `s${i}`, children: [node] } };
    const error = caught(() => Runtime.fromTopology(node, { agents: { Worker }, logger: silentLogger, keepAlive: false }));
    expect(error).toBeInstanceOf(CivitasError);
  });

  it("a hole in an object-form children list is reported at that child, not at the whole list", () => {
    const children = [, { agent: { name: "a", type: "Worker" } }];
    const error = topologyError(() => Runtime.fromTopology({ supervisor: { name: "s", children } }, { agents: { Worker }, logger: silentLogger }));
    expect(error.path).toBe("topology.supervisor.children[0]");
  });
});

describe("Runtime.suspend / resume argument checking", () => {
  it.each([
    ["suspend", (rt: Runtime) => rt.suspend("a", "why", null as unknown as undefined)],
    ["resume", (rt: Runtime) => rt.resume("a", "alice", null as unknown as undefined)],
  ])("%s with null options rejects with INVALID_ARGUMENT, not a raw TypeError", async (_op, call) => {
    const rt = new Runtime({ root: [new Worker("a")], logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    await rt.start();
    const error = await call(rt).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CivitasError);
    expect((error as CivitasError).code).toBe("INVALID_ARGUMENT");
    expect(rt.getAgent("a")?.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("Runtime.ask timeoutMs", () => {
  it("ask with timeoutMs: null is refused like suspend's, not silently turned into the 30 s default", async () => {
    class Echo extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        return this.reply({ ...message.payload });
      }
    }
    const rt = new Runtime({ root: [new Echo("a")], logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    await rt.start();
    const suspendError = await rt.suspend("a", "x", { timeoutMs: null as unknown as number }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((suspendError as CivitasError).code).toBe("INVALID_ARGUMENT");
    const askError = await rt.ask("a", {}, { timeoutMs: null as unknown as number }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((askError as CivitasError | undefined)?.code).toBe("INVALID_ARGUMENT");
  });
});

describe("Runtime stop paths", () => {
  it("a throwing 'escalated' listener does not keep the runtime from stopping when the root gives up", async () => {
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    const root = new Supervisor("root", { children: [new Crasher("c")], maxRestarts: 0 });
    const rt = new Runtime({ root, logger: silentLogger, keepAlive: false });
    runtimes.push(rt);
    let heard = 0;
    rt.on("escalated", () => {
      heard++;
      throw new Error("listener bug");
    });
    await rt.start();
    await rt.send("c", {});
    await eventually(() => heard === 1, "the root to give up");
    // the runtime stops the tree all the same
    await eventually(() => root.status === ProcessStatus.STOPPED, "the runtime to stop the tree");
    // SPEC §6: above the intensity at the root the tree is stopped; a stopped runtime refuses start().
    const restart = await rt.start().then(
      () => "resolved",
      (e: unknown) => (e as CivitasError).code,
    );
    expect(restart).toBe("RUNTIME_STOPPED");
    expect(await rt.send("c", {}).then(() => "delivered", (e: unknown) => (e as CivitasError).code)).toBe("RUNTIME_STOPPED");
  });

  it("runtime.stop() awaited inside handle() waits for that handler (as documented), and a stop started without awaiting finishes at once", async () => {
    const clock = new TestClock();
    const ref: { rt?: Runtime } = {};
    let stopping: ReturnType<typeof track<void>> | undefined;
    let finished = false;
    class Shutdown extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        stopping = track((ref.rt as Runtime).stop());
        if (message.payload.await === true) await stopping.promise;
        finished = true;
      }
    }
    // awaited: the stop waits for the handler, which waits for the stop, until shutdownTimeoutMs
    const awaited = new Runtime({ root: [new Shutdown("s", { shutdownTimeoutMs: 60_000 })], logger: silentLogger, keepAlive: false, clock });
    ref.rt = awaited;
    runtimes.push(awaited);
    await awaited.start();
    await awaited.send("s", { await: true });
    await eventually(() => stopping !== undefined, "the handler to call stop()");
    await turns(50);
    expect(stopping?.state).toBe("pending");
    await clock.advance(60_000);
    await eventually(() => stopping?.state === "resolved", "the stop to give up on the handler");

    // not awaited: the handler returns, and the stop completes without any time passing
    stopping = undefined;
    finished = false;
    const fired = new Runtime({ root: [new Shutdown("s", { shutdownTimeoutMs: 60_000 })], logger: silentLogger, keepAlive: false, clock });
    ref.rt = fired;
    runtimes.push(fired);
    await fired.start();
    await fired.send("s", { await: false });
    await eventually(() => stopping?.state === "resolved", "the stop to complete");
    expect(finished).toBe(true);
  });
});
