/**
 * Building a runtime from a YAML topology with `Runtime.fromTopology`, and
 * what a mistake in the topology looks like (TOPOLOGY_INVALID with a path).
 *
 * Run it with `npx tsx examples/topology.ts`.
 */
import {
  AgentProcess,
  DynamicSupervisor,
  Runtime,
  Supervisor,
  TopologyError,
  silentLogger,
  type AgentProcessOptions,
  type Message,
} from "civitas-ts";

/** Options a Greeter accepts: the usual agent options plus its own. */
interface GreeterOptions extends AgentProcessOptions {
  greeting?: string;
}

class Greeter extends AgentProcess {
  private readonly greeting: string;

  // A topology passes an agent's `options` mapping as the second constructor
  // argument, so agent-specific settings live next to mailboxSize & co.
  constructor(name: string, options: GreeterOptions = {}) {
    const { greeting, ...agentOptions } = options;
    super(name, agentOptions);
    this.greeting = typeof greeting === "string" ? greeting : "Hello";
  }

  override async handle(message: Message): Promise<Message | void> {
    return this.reply({ text: `${this.greeting}, ${String(message.payload.name)}!` });
  }
}

class Worker extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    return this.reply({ worker: this.name, echoed: message.payload });
  }
}

const topology = `
supervisor:
  name: root
  strategy: ONE_FOR_ALL
  maxRestarts: 5
  restartWindowMs: 30000
  backoff: EXPONENTIAL
  backoffBaseMs: 100
  children:
    - agent:
        name: greeter-en
        type: Greeter
        options: { greeting: Hello, mailboxSize: 100 }
    - agent:
        name: greeter-fr
        type: Greeter
        options: { greeting: Bonjour, capabilities: [greeting] }
    - supervisor:
        name: backend
        strategy: REST_FOR_ONE
        children:
          - dynamicSupervisor: { name: workers, maxChildren: 10, backoffBaseMs: 50 }
`;

console.log("building the runtime from YAML");
const runtime = Runtime.fromTopology(topology, { agents: { Greeter, Worker }, logger: silentLogger });
printTree(runtime.root, "  ");
await runtime.start();

for (const [agent, name] of [["greeter-en", "Ada"], ["greeter-fr", "Grace"]] as const) {
  const reply = await runtime.ask(agent, { name });
  console.log(`  ${agent} replied: ${String(reply.payload.text)}`);
}

// A topology cannot list a dynamic supervisor's children: they are spawned at
// run time. Find the DynamicSupervisor in the tree and spawn into it.
const workers = findSupervisor(runtime.root, "workers");
if (!(workers instanceof DynamicSupervisor)) throw new Error("no dynamic supervisor named 'workers'");
await workers.spawn(Worker, "worker-1");
const echoed = await runtime.ask("worker-1", { job: 7 });
console.log(`  spawned worker-1 under workers; it replied ${JSON.stringify(echoed.payload)}`);

await runtime.stop();
console.log("stopped");

console.log("a topology with mistakes is refused before anything runs:");
const mistakes: [string, string | object][] = [
  ["a misspelt setting", "supervisor:\n  name: root\n  stratgey: ONE_FOR_ALL\n  children: []\n"],
  ["an unknown agent class", { supervisor: { name: "root", children: [{ agent: { name: "a", type: "Gretter" } }] } }],
  ["a duplicate name", { supervisor: { name: "root", children: [{ agent: { name: "root", type: "Greeter" } }] } }],
  ["a bad option value", { supervisor: { name: "root", children: [{ agent: { name: "g", type: "Greeter", options: { mailboxSize: 0 } } }] } }],
];
for (const [what, bad] of mistakes) {
  try {
    Runtime.fromTopology(bad, { agents: { Greeter }, logger: silentLogger });
    throw new Error(`${what} was accepted`);
  } catch (error) {
    if (!(error instanceof TopologyError)) throw error;
    console.log(`  ${what}: ${error.code} at ${error.path}`);
    console.log(`    ${error.message}`);
  }
}

function printTree(node: unknown, indent: string): void {
  if (node instanceof Supervisor) {
    console.log(`${indent}${node.name} (Supervisor, ${node.strategy})`);
    for (const child of node.children) printTree(child, `${indent}  `);
  } else if (node instanceof DynamicSupervisor) {
    console.log(`${indent}${node.name} (DynamicSupervisor, maxChildren ${node.maxChildren})`);
  } else if (node instanceof AgentProcess) {
    console.log(`${indent}${node.name} (${node.constructor.name})`);
  }
}

function findSupervisor(node: unknown, name: string): unknown {
  if (node instanceof DynamicSupervisor) return node.name === name ? node : undefined;
  if (!(node instanceof Supervisor)) return undefined;
  if (node.name === name) return node;
  for (const child of node.children) {
    const found = findSupervisor(child, name);
    if (found !== undefined) return found;
  }
  return undefined;
}
