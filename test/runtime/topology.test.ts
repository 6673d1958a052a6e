import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  CivitasError,
  DynamicSupervisor,
  Runtime,
  silentLogger,
  Supervisor,
  TopologyError,
  type AgentProcessOptions,
  type Message,
} from "../../src/index.js";
import { turns } from "./fixtures.js";
import { gate } from "../support/agents.js";
import { track } from "../support/outcome.js";

const runtimes: Runtime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.stop()));
});

type Options = AgentProcessOptions & Record<string, unknown>;

class Greeter extends AgentProcess {
  readonly received: Options | undefined;
  constructor(name: string, options?: Options) {
    super(name, options);
    this.received = options;
  }
  override async handle(message: Message): Promise<Message> {
    const greeting = typeof this.received?.greeting === "string" ? this.received.greeting : "hello";
    return this.reply({ text: `${greeting}, ${String(message.payload.name)}` });
  }
}

class Worker extends AgentProcess {
  readonly received: Options | undefined;
  constructor(name: string, options?: Options) {
    super(name, options);
    this.received = options;
  }
}

/** Holds the first message it handles until `release` opens. */
class Holder extends AgentProcess {
  readonly holding = gate();
  readonly release = gate();
  override async handle(): Promise<void> {
    this.holding.open();
    await this.release.promise;
  }
}

const agents = { Greeter, Worker, Holder };

const YAML = `
supervisor:
  name: root
  strategy: ONE_FOR_ALL
  maxRestarts: 5
  restartWindowMs: 1000
  children:
    - agent: { name: greeter, type: Greeter, options: { mailboxSize: 10, greeting: hi } }
    - supervisor:
        name: inner
        strategy: REST_FOR_ONE
        backoff: LINEAR
        children:
          - agent: { name: worker-1, type: Worker }
          - agent:
              name: worker-2
              type: Worker
              options:
                maxRetries: 0
                capabilities: [crunch]
    - dynamicSupervisor: { name: pool, maxChildren: 5 }
`;

const OBJECT = {
  supervisor: {
    name: "root",
    strategy: "ONE_FOR_ALL",
    maxRestarts: 5,
    restartWindowMs: 1000,
    children: [
      { agent: { name: "greeter", type: "Greeter", options: { mailboxSize: 10, greeting: "hi" } } },
      {
        supervisor: {
          name: "inner",
          strategy: "REST_FOR_ONE",
          backoff: "LINEAR",
          children: [
            { agent: { name: "worker-1", type: "Worker" } },
            { agent: { name: "worker-2", type: "Worker", options: { maxRetries: 0, capabilities: ["crunch"] } } },
          ],
        },
      },
      { dynamicSupervisor: { name: "pool", maxChildren: 5 } },
    ],
  },
};

function build(topology: string | object): Runtime {
  const rt = Runtime.fromTopology(topology, { agents, logger: silentLogger });
  runtimes.push(rt);
  return rt;
}

function topologyError(topology: string | object): TopologyError {
  let caught: unknown;
  try {
    Runtime.fromTopology(topology, { agents, logger: silentLogger });
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(TopologyError);
  expect(caught).toBeInstanceOf(CivitasError);
  expect((caught as TopologyError).code).toBe("TOPOLOGY_INVALID");
  return caught as TopologyError;
}

function agentNode(name: string, type = "Worker"): object {
  return { agent: { name, type } };
}

describe("Runtime.fromTopology builds the tree", () => {
  it.each([
    ["YAML text", YAML],
    ["an object", OBJECT],
  ])("from %s", async (_what, topology) => {
    const rt = build(topology);
    const root = rt.root as Supervisor;
    expect(root).toBeInstanceOf(Supervisor);
    expect(root.name).toBe("root");
    expect(root.strategy).toBe("ONE_FOR_ALL");
    expect(root.children.map((c) => c.name)).toEqual(["greeter", "inner", "pool"]);

    const [greeter, inner, pool] = root.children;
    expect(greeter).toBeInstanceOf(Greeter);
    expect((greeter as Greeter).received).toEqual({ mailboxSize: 10, greeting: "hi" });

    expect(inner).toBeInstanceOf(Supervisor);
    expect((inner as Supervisor).strategy).toBe("REST_FOR_ONE");
    expect((inner as Supervisor).children.map((c) => c.name)).toEqual(["worker-1", "worker-2"]);
    const [w1, w2] = (inner as Supervisor).children;
    expect(w1).toBeInstanceOf(Worker);
    expect((w1 as Worker).received).toEqual({});
    expect((w2 as Worker).received).toEqual({ maxRetries: 0, capabilities: ["crunch"] });
    expect((w2 as Worker).capabilities).toEqual(["crunch"]);

    expect(pool).toBeInstanceOf(DynamicSupervisor);
    expect((pool as DynamicSupervisor).maxChildren).toBe(5);

    expect(rt.agents().map((a) => a.name)).toEqual(["greeter", "worker-1", "worker-2"]);
    expect(rt.getAgent("greeter")).toBe(greeter);

    await rt.start();
    const reply = await rt.ask("greeter", { name: "Ada" }, { timeoutMs: 5_000 });
    expect(reply.payload).toEqual({ text: "hi, Ada" });
  });

  it("applies the mailboxSize option it passes to the agent", async () => {
    const rt = build({ agent: { name: "small", type: "Holder", options: { mailboxSize: 2 } } });
    const small = rt.getAgent("small") as Holder;
    await rt.start();
    // the first message keeps the agent busy: the next ones stay in the mailbox
    await rt.send("small", { n: 0 });
    await small.holding.promise;
    await rt.send("small", { n: 1 });
    await rt.send("small", { n: 2 });
    const third = track(rt.send("small", { n: 3 }));
    await turns();
    expect(small.mailbox.size).toBe(2);
    expect(third.state).toBe("pending");
    const stopping = rt.stop();
    await turns();
    small.release.open(); // released once the stop began: the agent takes nothing more
    await stopping;
    await turns();
    expect(third.state).toBe("rejected");
  });

  it("accepts a single agent or a dynamic supervisor at the top, wrapped in a root supervisor", () => {
    const rt = build({ agent: { name: "solo", type: "Greeter" } });
    expect((rt.root as Supervisor).name).toBe("root");
    expect(rt.getAgent("solo")).toBeInstanceOf(Greeter);
    const dyn = build({ dynamicSupervisor: { name: "workers" } });
    expect(dyn.root).toBeInstanceOf(DynamicSupervisor);
  });

  it("treats an empty or missing children list as no children", () => {
    const rt = build("supervisor:\n  name: empty\n  children:\n");
    expect((rt.root as Supervisor).children).toEqual([]);
    const bare = build({ supervisor: { name: "bare" } });
    expect((bare.root as Supervisor).children).toEqual([]);
  });
});

describe("Runtime.fromTopology refuses bad topologies with TOPOLOGY_INVALID", () => {
  it("an unknown class, listing the known ones", () => {
    const error = topologyError({ supervisor: { name: "root", children: [agentNode("w", "Wrker")] } });
    expect(error.path).toBe("topology.supervisor.children[0].agent.type");
    expect(error.message).toContain("'Wrker'");
    expect(error.message).toContain("Greeter");
    expect(error.message).toContain("Worker");
  });

  it.each([
    ["Gretter", "Greeter", "a letter doubled in the wrong place"],
    ["greeter", "Greeter", "the wrong case"],
    ["Wokrer", "Worker", "two letters swapped"],
    ["Wrker", "Worker", "a letter missing"],
    ["GreeterX", "Greeter", "a letter too many"],
  ])("an unknown class close to a registered one suggests it: '%s' -> did you mean %s? (%s)", (type, suggestion) => {
    const error = topologyError({ supervisor: { name: "root", children: [agentNode("w", type)] } });
    expect(error.path).toBe("topology.supervisor.children[0].agent.type");
    expect(error.message).toContain(`unknown agent class '${type}'; did you mean ${suggestion}? known: Greeter, Worker, Holder`);
  });

  it("an unknown class far from every registered one suggests none, and the closest of several wins", () => {
    for (const type of ["Mailer", "toString", "W"]) {
      const error = topologyError({ agent: { name: "w", type } });
      expect(error.message).not.toContain("did you mean");
      expect(error.message).toContain(`unknown agent class '${type}'; known: Greeter, Worker, Holder — add it to { agents: { ${type} } }`);
    }
    class Greeting extends Greeter {}
    let caught: unknown;
    try {
      Runtime.fromTopology({ agent: { name: "g", type: "Gretting" } }, { agents: { Greeter, Greeting }, logger: silentLogger });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TopologyError);
    expect((caught as TopologyError).message).toContain("did you mean Greeting?");
  });

  it("a class name that is only on Object.prototype", () => {
    const error = topologyError({ agent: { name: "w", type: "toString" } });
    expect(error.path).toBe("topology.agent.type");
  });

  it("duplicate names, naming both entries", () => {
    const error = topologyError({
      supervisor: {
        name: "root",
        children: [agentNode("twin"), { supervisor: { name: "inner", children: [agentNode("twin")] } }],
      },
    });
    expect(error.path).toBe("topology.supervisor.children[1].supervisor.children[0].agent.name");
    expect(error.message).toContain("'twin'");
    expect(error.message).toContain("topology.supervisor.children[0].agent.name");
    expect(error.message).toContain(error.path);
  });

  it("a supervisor and an agent sharing a name", () => {
    const error = topologyError({ supervisor: { name: "same", children: [agentNode("same")] } });
    expect(error.path).toBe("topology.supervisor.children[0].agent.name");
    expect(error.message).toContain("topology.supervisor.name");
  });

  it("a strategy or restart setting with no value (YAML null), pointing at it", () => {
    for (const key of ["strategy", "maxRestarts", "backoff"]) {
      const error = topologyError(`supervisor:\n  name: root\n  ${key}:\n  children: []\n`);
      expect(error.path, key).toBe(`topology.supervisor.${key}`);
    }
    expect(topologyError("dynamicSupervisor:\n  name: d\n  maxChildren:\n").path).toBe("topology.dynamicSupervisor.maxChildren");
  });

  it("missing options, naming them", () => {
    for (const options of [undefined, null]) {
      let error: unknown;
      try {
        Runtime.fromTopology("agent: { name: a, type: Greeter }", options as unknown as Parameters<typeof Runtime.fromTopology>[1]);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(TopologyError);
      expect((error as TopologyError).path).toBe("options");
      expect((error as TopologyError).message).toContain("agents");
    }
  });

  it("a bad strategy, pointing at the strategy", () => {
    const error = topologyError({ supervisor: { name: "root", strategy: "ALL_FOR_NONE", children: [] } });
    expect(error.path).toBe("topology.supervisor.strategy");
    expect(error.message).toContain("ALL_FOR_NONE");
    expect(error.message).toContain("ONE_FOR_ONE");
    expect(error.cause).toBeInstanceOf(CivitasError);
  });

  it("a bad agent option, pointing at the option", () => {
    const error = topologyError({ supervisor: { name: "root", children: [{ agent: { name: "w", type: "Worker", options: { mailboxSize: -1 } } }] } });
    expect(error.path).toBe("topology.supervisor.children[0].agent.options.mailboxSize");
    expect(error.message).toContain("mailboxSize");
  });

  it("a bad dynamic supervisor bound, pointing at it", () => {
    const error = topologyError({ dynamicSupervisor: { name: "pool", maxChildren: 0 } });
    expect(error.path).toBe("topology.dynamicSupervisor.maxChildren");
  });

  it("an invalid agent name, pointing at the name", () => {
    const error = topologyError({ agent: { name: "has space", type: "Worker" } });
    expect(error.path).toBe("topology.agent.name");
  });

  it.each([
    [{ supervisor: { name: "root", stratgy: "ONE_FOR_ALL" } }, "topology.supervisor.stratgy"],
    [{ supervisor: { name: "root", children: [{ agent: { name: "w", type: "Worker", opts: {} } }] } }, "topology.supervisor.children[0].agent.opts"],
    [{ dynamicSupervisor: { name: "pool", children: [] } }, "topology.dynamicSupervisor.children"],
    [{ process: { name: "x" } }, "topology"],
    [{ agent: { name: "a", type: "Worker" }, supervisor: { name: "s" } }, "topology"],
    [{}, "topology"],
  ])("unknown keys: %j at %s", (topology, path) => {
    const error = topologyError(topology);
    expect(error.path).toBe(path);
    expect(error.message.startsWith(`${path}:`)).toBe(true);
  });

  it.each([
    ["a string child", { supervisor: { name: "root", children: ["greeter"] } }, "topology.supervisor.children[0]"],
    ["a null child", { supervisor: { name: "root", children: [null] } }, "topology.supervisor.children[0]"],
    ["a list child", { supervisor: { name: "root", children: [[agentNode("a")]] } }, "topology.supervisor.children[0]"],
    ["a scalar body", { supervisor: "root" }, "topology.supervisor"],
    ["non-mapping options", { agent: { name: "a", type: "Worker", options: [1] } }, "topology.agent.options"],
    ["children that are not a list", { supervisor: { name: "root", children: { a: 1 } } }, "topology.supervisor.children"],
    ["a top-level list", [agentNode("a")], "topology"],
    ["a YAML scalar", "just some text", "topology"],
    ["empty YAML", "", "topology"],
  ])("a non-mapping node (%s)", (_what, topology, path) => {
    expect(topologyError(topology).path).toBe(path);
  });

  it.each([
    ["a missing name", { agent: { type: "Worker" } }, "topology.agent.name"],
    ["an empty name", { supervisor: { name: "" } }, "topology.supervisor.name"],
    ["a missing type", { agent: { name: "a" } }, "topology.agent.type"],
  ])("%s", (_what, topology, path) => {
    expect(topologyError(topology).path).toBe(path);
  });

  it.each([
    ["an unclosed flow sequence", "supervisor: { name: root, children: [ }"],
    ["bad indentation", "supervisor:\n  name: root\n children: []"],
    ["a duplicate key", "supervisor:\n  name: a\n  name: b\n"],
  ])("invalid YAML (%s)", (_what, text) => {
    const error = topologyError(text);
    expect(error.path).toBe("topology");
    expect(error.message).toContain("YAML");
    expect(error.cause).toBeInstanceOf(Error);
  });

  it.each([
    ["two documents", "agent: { name: a, type: Worker }\n---\nagent: { name: b, type: Worker }\n", 2],
    ["a second document after an end marker", "agent: { name: a, type: Worker }\n...\n---\nagent: { name: b, type: Worker }\n", 2],
    ["a trailing separator", "agent: { name: a, type: Worker }\n---\n", 2],
    ["three documents", "---\nagent: { name: a, type: Worker }\n---\nagent: { name: b, type: Worker }\n---\nagent: { name: c, type: Worker }\n", 3],
  ])("YAML text with more than one document (%s), instead of cutting it to the first", (_what, text, count) => {
    const error = topologyError(text);
    expect(error.path).toBe("topology");
    expect(error.message).toContain(`holds ${count} YAML documents`);
  });

  it("accepts one document with its own start and end markers", () => {
    const rt = build("---\nagent: { name: a, type: Worker }\n...\n");
    expect(rt.getAgent("a")).toBeInstanceOf(Worker);
  });

  it("YAML text over 1 MB, before parsing it", () => {
    const padding = `# ${"x".repeat(1024 * 1024)}\n`;
    const error = topologyError(`${padding}agent: { name: a, type: Worker }\n`);
    expect(error.path).toBe("topology");
    expect(error.message).toContain("1048576");
    expect(error.message).toContain("1 MB");
    // Multi-byte characters count as the bytes they take: 400,000 three-byte characters are 1.2 MB.
    const euros = `# ${"€".repeat(400_000)}\nagent: { name: a, type: Worker }\n`;
    expect(euros.length).toBeLessThan(1024 * 1024);
    expect(topologyError(euros).message).toContain(`${Buffer.byteLength(euros)} bytes`);
  });

  it("accepts YAML text of just under 1 MB", () => {
    const text = "agent: { name: a, type: Worker }\n";
    const comment = `#${"x".repeat(1024 * 1024 - text.length - 2)}\n`;
    expect(Buffer.byteLength(comment + text)).toBe(1024 * 1024);
    expect(build(comment + text).getAgent("a")).toBeInstanceOf(Worker);
  });

  it("a missing agents map", () => {
    expect(() => Runtime.fromTopology(OBJECT, { agents: undefined as unknown as typeof agents, logger: silentLogger })).toThrow(TopologyError);
  });
});
