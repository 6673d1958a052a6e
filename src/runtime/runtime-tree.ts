import { assertValidName } from "../bus/registry.js";
import { describeValue } from "../errors/civitas-error.js";
import { DuplicateNameError, InvalidArgumentError } from "../errors/errors.js";
import { AgentProcess } from "../process/agent-process.js";
import type { TransportHost } from "../bus/transport.js";
import { readStatesAhead } from "../state/read-ahead.js";
import { startChild, type SupervisedChild } from "../contracts/child.js";
import { DynamicSupervisor } from "../supervision/dynamic-supervisor.js";
import { Supervisor } from "../supervision/supervisor.js";
import type { RuntimeOptions } from "./runtime-options.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";

/**
 * The root of the tree `root` names: a supervisor or dynamic supervisor as it
 * is, an agent or a list of them wrapped in a ONE_FOR_ONE supervisor named `root`.
 * @throws {@link InvalidArgumentError} for anything else
 * @internal
 */
export function rootOf(root: RuntimeOptions["root"]): SupervisedChild {
  if (Array.isArray(root)) return new Supervisor("root", { children: root as SupervisedChild[] });
  if (root instanceof AgentProcess) return new Supervisor("root", { children: [root] });
  if (typeof root !== "object" || root === null || typeof (root as SupervisedChild)[startChild] !== "function") {
    throw new InvalidArgumentError("root", `new Runtime({ root }) needs a Supervisor, DynamicSupervisor, AgentProcess or an array of them, got ${describeValue(root)}`);
  }
  return root as SupervisedChild;
}

/** The members of a checked tree by name, agents and supervisors apart, in the order they register (depth first, children in order). @internal */
export interface CheckedTree {
  readonly agents: Map<string, AgentProcess>;
  readonly supervisors: Map<string, SupervisedChild>;
}

/**
 * Checks the whole tree before anything is attached, so a refused
 * construction leaves every agent and supervisor untouched: names valid and
 * unique across agents and supervisors, no instance listed twice, none
 * already belonging to a runtime. Returns its members by name, for the
 * runtime's registry to adopt.
 * @throws {@link DuplicateNameError} when two agents or supervisors share a name
 * @throws {@link InvalidArgumentError} for a bad name, or an instance listed twice or already attached
 * @internal
 */
export function checkTree(root: SupervisedChild): CheckedTree {
  // One entry per name: an instance met twice finds itself under its own name.
  const agents = new Map<string, AgentProcess>();
  const supervisors = new Map<string, SupervisedChild>();
  // A loop, not recursion: a tree built in code may nest deeper than the stack allows.
  const pending: SupervisedChild[] = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    const agent = node instanceof AgentProcess ? (node as AgentProcess) : undefined;
    const what = agent === undefined ? "supervisor" : "agent";
    const first = typeof node.name === "string" ? (agents.get(node.name) ?? supervisors.get(node.name)) : undefined;
    if (first === node) {
      throw new InvalidArgumentError(what, `${what} '${node.name}' appears twice in the tree; create one instance per place in the tree`);
    }
    assertValidName(node.name, what);
    if (node.attached) {
      throw new InvalidArgumentError(what, `${what} '${node.name}' already belongs to a runtime; create a new instance instead`);
    }
    if (first !== undefined) {
      const firstWhat = first instanceof AgentProcess ? "agent" : "supervisor";
      throw new DuplicateNameError(node.name, `${what} name '${node.name}' is already used in this tree by a ${firstWhat}; names of agents and supervisors must be unique`);
    }
    if (agent !== undefined) agents.set(agent.name, agent);
    else supervisors.set(node.name, node);
    if (node instanceof Supervisor || node instanceof DynamicSupervisor) {
      // Pushed last to first, so children are checked in order; no spread, which would pass every child as an argument.
      const children = node.children;
      for (let i = children.length - 1; i >= 0; i--) pending.push(children[i] as SupervisedChild);
    }
  }
  return { agents, supervisors };
}

/**
 * Starts the tree under `root`; every agent reads its record as it starts, and
 * a store that can reads them all in one go first. With a transport, it
 * connects and learns the other runtimes' agents before any agent starts and sends.
 * @internal
 */
export function startTree(root: SupervisedChild, services: RuntimeServices, host: TransportHost | undefined): Promise<void> {
  const transport = services.bus.transport;
  if (transport === undefined || host === undefined) return startRoot(root, services);
  return transport.start(host).then(() => startRoot(root, services));
}

function startRoot(root: SupervisedChild, services: RuntimeServices): Promise<void> {
  const dropUnread = readStatesAhead(services.store, () => services.registry.names());
  const started = root[startChild]();
  void started.then(dropUnread, dropUnread);
  return started;
}
