import { parse as parseYaml } from "yaml";
import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, TopologyError } from "../errors/errors.js";
import type { AgentProcessOptions } from "../process/agent-options.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { SupervisedChild } from "../supervision/child.js";
import { DynamicSupervisor } from "../supervision/dynamic-supervisor.js";
import { Supervisor } from "../supervision/supervisor.js";

/** Agent classes a topology may name in `type`, by that name. */
export type AgentClasses = Readonly<Record<string, new (name: string, options?: AgentProcessOptions & Record<string, unknown>) => AgentProcess>>;

const SUPERVISOR_KEYS = ["name", "strategy", "maxRestarts", "restartWindowMs", "backoff", "backoffBaseMs", "backoffMaxMs", "children"];
const DYNAMIC_KEYS = ["name", "maxChildren", "maxRestarts", "restartWindowMs", "backoff", "backoffBaseMs", "backoffMaxMs"];
const AGENT_KEYS = ["name", "type", "options"];
const NODE_KINDS = ["supervisor", "dynamicSupervisor", "agent"];

/**
 * Builds a supervision tree from a topology: YAML text or the equivalent
 * object. Every node is `{ supervisor: {...} }`, `{ dynamicSupervisor: {...} }`
 * or `{ agent: { name, type, options? } }`; unknown keys are refused so a typo
 * cannot pass silently.
 *
 * @throws {@link TopologyError} (`TOPOLOGY_INVALID`) whose `path` names the offending entry
 * @example
 * ```yaml
 * supervisor:
 *   name: root
 *   strategy: ONE_FOR_ALL
 *   children:
 *     - agent: { name: greeter, type: Greeter, options: { mailboxSize: 10 } }
 *     - dynamicSupervisor: { name: workers, maxChildren: 50 }
 * ```
 */
export function buildTopology(topology: string | object, classes: AgentClasses): SupervisedChild {
  let description: unknown = topology;
  if (typeof topology === "string") {
    try {
      description = parseYaml(topology);
    } catch (error) {
      throw new TopologyError("topology", `is not valid YAML: ${(error as Error).message}`, { cause: error });
    }
  }
  if (typeof classes !== "object" || classes === null) {
    throw new TopologyError("options.agents", "must map class names to AgentProcess subclasses, e.g. { agents: { Greeter } }");
  }
  return new TopologyBuilder(classes).node(description, "topology");
}

class TopologyBuilder {
  private readonly seen = new Map<string, string>();

  constructor(private readonly classes: AgentClasses) {}

  node(value: unknown, path: string): SupervisedChild {
    const entry = record(value, path);
    const kinds = Object.keys(entry);
    if (kinds.length !== 1 || !NODE_KINDS.includes(kinds[0] as string)) {
      throw new TopologyError(path, `must have exactly one key, one of ${NODE_KINDS.join(", ")}; got ${kinds.length === 0 ? "none" : kinds.join(", ")}`);
    }
    const kind = kinds[0] as string;
    const at = `${path}.${kind}`;
    const body = record(entry[kind], at);
    if (kind === "agent") return this.agent(body, at);
    if (kind === "dynamicSupervisor") return this.dynamic(body, at);
    return this.supervisor(body, at);
  }

  private supervisor(body: Record<string, unknown>, at: string): Supervisor {
    onlyKeys(body, SUPERVISOR_KEYS, at);
    const name = this.name(body, at);
    const children = body.children ?? [];
    if (!Array.isArray(children)) throw new TopologyError(`${at}.children`, `must be a list, got ${describeValue(children)}`);
    const built = children.map((child, i) => this.node(child, `${at}.children[${i}]`));
    const { children: _children, name: _name, ...options } = body;
    return construct(at, () => new Supervisor(name, { ...(options as object), children: built }), body);
  }

  private dynamic(body: Record<string, unknown>, at: string): DynamicSupervisor {
    onlyKeys(body, DYNAMIC_KEYS, at);
    const name = this.name(body, at);
    const { name: _name, ...options } = body;
    return construct(at, () => new DynamicSupervisor(name, options), body);
  }

  private agent(body: Record<string, unknown>, at: string): AgentProcess {
    onlyKeys(body, AGENT_KEYS, at);
    const name = this.name(body, at);
    const type = body.type;
    if (typeof type !== "string" || type.length === 0) throw new TopologyError(`${at}.type`, `must name an agent class, got ${describeValue(type)}`);
    const Class = Object.hasOwn(this.classes, type) ? this.classes[type] : undefined;
    if (typeof Class !== "function") {
      const known = Object.keys(this.classes);
      throw new TopologyError(`${at}.type`, `unknown agent class '${type}'; known: ${known.length > 0 ? known.join(", ") : "none"} — add it to { agents: { ${type} } }`);
    }
    const options = body.options === undefined ? {} : record(body.options, `${at}.options`);
    return construct(at, () => new Class(name, options), body, options);
  }

  private name(body: Record<string, unknown>, at: string): string {
    const name = body.name;
    if (typeof name !== "string" || name.length === 0) throw new TopologyError(`${at}.name`, `must be a non-empty string, got ${describeValue(name)}`);
    const first = this.seen.get(name);
    if (first !== undefined) throw new TopologyError(`${at}.name`, `'${name}' is already used at ${first}; names must be unique`);
    this.seen.set(name, `${at}.name`);
    return name;
  }
}

function record(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TopologyError(path, `must be a mapping, got ${describeValue(value)}`);
  }
  return value as Record<string, unknown>;
}

function onlyKeys(body: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw new TopologyError(`${at}.${key}`, `is not a known setting; allowed: ${allowed.join(", ")}`);
  }
}

/**
 * Runs a constructor, turning what it throws into a `TopologyError`. When it
 * refused one named setting (`InvalidArgumentError.argument`), the path
 * points at that setting: `…supervisor.strategy`, `…agent.options.mailboxSize`.
 */
function construct<T>(at: string, make: () => T, body: Record<string, unknown>, options?: Record<string, unknown>): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof TopologyError) throw error;
    const detail = error instanceof CivitasError ? error.message : String(error);
    let path = at;
    if (error instanceof InvalidArgumentError) {
      if (options !== undefined && Object.hasOwn(options, error.argument)) path = `${at}.options.${error.argument}`;
      else if (Object.hasOwn(body, error.argument)) path = `${at}.${error.argument}`;
    }
    throw new TopologyError(path, detail, { cause: error });
  }
}
