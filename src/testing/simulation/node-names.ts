import type { SupervisedChild } from "../../contracts/child.js";
import { DuplicateNameError } from "../../errors/errors.js";
import { AgentProcess } from "../../process/agent-process.js";
import { DynamicSupervisor } from "../../supervision/dynamic-supervisor.js";
import { Supervisor } from "../../supervision/supervisor.js";
import type { SimulationNodes } from "./simulation-node.js";

/**
 * Refuses agent names used on two nodes of a simulation: the simulated bus
 * routes business messages and control by name (`civitas.agent.<name>`,
 * `civitas.ctl.<name>`), as NATS does, so a name on two nodes would reach
 * one of them at random on a real bus. Each factory is called once here
 * to read its tree (the trees are discarded); a factory that throws is
 * left for `start()` to report. Agents spawned later are not checked.
 * @throws {@link DuplicateNameError} (`DUPLICATE_NAME`) naming the agent and both nodes
 * @internal
 */
export function checkNodeNames(root: () => SupervisedChild | readonly SupervisedChild[], nodes: SimulationNodes): void {
  const owner = new Map<string, string>();
  for (const [node, factory] of [["main", root] as const, ...Object.entries(nodes)]) {
    let tree: SupervisedChild | readonly SupervisedChild[];
    try {
      tree = factory();
    } catch {
      continue; // start() builds it again and fails the way a runtime does
    }
    for (const name of agentNames(tree)) {
      const first = owner.get(name);
      if (first !== undefined && first !== node) {
        throw new DuplicateNameError(
          name,
          `simulate({ nodes }): agent name '${name}' is used on node ${first} and on node ${node}; the simulated bus routes by name (civitas.agent.${name}) as NATS does, so agent names must be unique across nodes — rename one of them`,
        );
      }
      owner.set(name, node);
    }
  }
}

/** The names of the agents of `tree` (supervisors are not on the bus), depth first. */
function agentNames(tree: SupervisedChild | readonly SupervisedChild[]): string[] {
  const names: string[] = [];
  const pending: unknown[] = Array.isArray(tree) ? [...(tree as readonly SupervisedChild[])] : [tree];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (node instanceof AgentProcess) names.push(node.name);
    else if (node instanceof Supervisor || node instanceof DynamicSupervisor) pending.push(...node.children);
  }
  return names;
}
