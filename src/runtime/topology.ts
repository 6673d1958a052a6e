import { parseAllDocuments } from "yaml";
import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, TopologyError } from "../errors/errors.js";
import { AgentProcess } from "../process/agent-process.js";
import type { SupervisedChild } from "../contracts/child.js";
import { DynamicSupervisor } from "../supervision/dynamic-supervisor.js";
import { Supervisor } from "../supervision/supervisor.js";
import { closestName } from "./closest-name.js";
import type { AgentClasses, FromTopologyOptions, RuntimeOptions } from "./runtime-options.js";

const SUPERVISOR_KEYS = ["name", "strategy", "maxRestarts", "restartWindowMs", "backoff", "backoffBaseMs", "backoffMaxMs", "children"];
const DYNAMIC_KEYS = ["name", "maxChildren", "maxRestarts", "restartWindowMs", "backoff", "backoffBaseMs", "backoffMaxMs"];
const AGENT_KEYS = ["name", "type", "options"];
const NODE_KINDS = ["supervisor", "dynamicSupervisor", "agent"];
/** How deeply supervisors may nest in a topology: far beyond any real tree, far below the stack limit. */
const MAX_TOPOLOGY_DEPTH = 100;
/** The most bytes (UTF-8) of topology text parsed: 1 MB, far beyond any real tree, far below what would stall a process. */
const MAX_TOPOLOGY_BYTES = 1024 * 1024;

/**
 * The options of `Runtime.fromTopology(topology, options)` as runtime options:
 * the tree built from `topology` as root, the agent classes left out.
 * @throws {@link TopologyError} (`TOPOLOGY_INVALID`) naming the offending entry, or `options`
 * when the options (with their `agents`) are missing
 * @internal
 */
export function topologyRuntimeOptions(topology: string | object, options: FromTopologyOptions): RuntimeOptions {
  if (typeof options !== "object" || (options as unknown) === null) {
    throw new TopologyError(
      "options",
      `Runtime.fromTopology(topology, options) needs an options object with the agent classes the topology names, e.g. { agents: { Greeter } }; got ${describeValue(options)}`,
    );
  }
  const { agents, ...rest } = options;
  return { ...rest, root: buildTopology(topology, agents) };
}

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
  const description = typeof topology === "string" ? parseTopologyText(topology) : topology;
  if (typeof classes !== "object" || classes === null) {
    throw new TopologyError("options.agents", "must map class names to AgentProcess subclasses, e.g. { agents: { Greeter } }");
  }
  const builder = new TopologyBuilder(classes);
  // A top-level agent runs under a supervisor the runtime names "root": the name is taken.
  if (typeof description === "object" && description !== null && "agent" in description) builder.reserve("root", "the supervisor that wraps a top-level agent");
  return builder.node(description, "topology", 1);
}

/**
 * Parses topology YAML, refusing what the yaml library would only warn
 * about (an unknown tag such as `!Agent`, silently dropped otherwise) and
 * keeping its warnings off stderr: what is wrong is in the error. Text over
 * {@link MAX_TOPOLOGY_BYTES} is refused before it is parsed, and so is text
 * holding more than one YAML document (a `---` separator), which would
 * otherwise be cut silently to its first document.
 */
function parseTopologyText(text: string): unknown {
  const bytes = text.length > MAX_TOPOLOGY_BYTES ? text.length : Buffer.byteLength(text, "utf8"); // UTF-8 has at least one byte per UTF-16 unit
  if (bytes > MAX_TOPOLOGY_BYTES) {
    throw new TopologyError("topology", `is ${text.length > MAX_TOPOLOGY_BYTES ? "at least " : ""}${bytes} bytes of text, more than the ${MAX_TOPOLOGY_BYTES} (1 MB) a topology may have; describe the tree, not its data, and spawn large numbers of agents at run time under a dynamicSupervisor`);
  }
  let documents: ReturnType<typeof parseAllDocuments>;
  try {
    documents = parseAllDocuments(text, { logLevel: "silent" });
  } catch (error) {
    throw new TopologyError("topology", `is not valid YAML: ${(error as Error).message}`, { cause: error });
  }
  if (documents.length > 1) {
    throw new TopologyError("topology", `holds ${documents.length} YAML documents (separated by '---'); a topology is one document with one root — remove the separators, or build one runtime per document`);
  }
  try {
    const document = documents[0];
    if (document === undefined) return null; // empty text
    const problem = document.errors[0] ?? document.warnings[0];
    if (problem !== undefined) throw problem;
    return document.toJS();
  } catch (error) {
    throw new TopologyError("topology", `is not valid YAML: ${(error as Error).message}`, { cause: error });
  }
}

class TopologyBuilder {
  private readonly seen = new Map<string, string>();

  constructor(private readonly classes: AgentClasses) {}

  /** Marks `name` as taken by something the topology does not list itself. */
  reserve(name: string, by: string): void {
    this.seen.set(name, by);
  }

  node(value: unknown, path: string, depth: number): SupervisedChild {
    if (depth > MAX_TOPOLOGY_DEPTH) throw new TopologyError(path, `nests supervisors deeper than ${MAX_TOPOLOGY_DEPTH} levels; flatten the tree`);
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
    return this.supervisor(body, at, depth);
  }

  private supervisor(body: Record<string, unknown>, at: string, depth: number): Supervisor {
    onlyKeys(body, SUPERVISOR_KEYS, at);
    const name = this.name(body, at);
    const children = body.children ?? [];
    if (!Array.isArray(children)) throw new TopologyError(`${at}.children`, `must be a list, got ${describeValue(children)}`);
    // Array.from, not map: a hole in a sparse list is reported at its index instead of skipped.
    const built = Array.from(children as unknown[], (child, i) => this.node(child, `${at}.children[${i}]`, depth + 1));
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
    if (!Object.hasOwn(this.classes, type)) {
      const known = Object.keys(this.classes);
      const suggestion = closestName(type, known);
      const hint = suggestion === undefined ? "" : `did you mean ${suggestion}? `;
      throw new TopologyError(`${at}.type`, `unknown agent class '${type}'; ${hint}known: ${known.length > 0 ? known.join(", ") : "none"} — ${hint === "" ? "" : "or "}add it to { agents: { ${type} } }`);
    }
    const Class = this.classes[type];
    if (typeof Class !== "function") {
      throw new TopologyError(`options.agents.${type}`, `must be an AgentProcess subclass, got ${describeValue(Class)}`);
    }
    const options = body.options === undefined ? {} : record(body.options, `${at}.options`);
    const agent: unknown = construct(at, () => new Class(name, options), body, options);
    if (!(agent instanceof AgentProcess)) {
      throw new TopologyError(`${at}.type`, `'${type}' does not build an AgentProcess (got ${describeValue(agent)}); register a class that extends AgentProcess under { agents: { ${type} } }`);
    }
    if (agent.name !== name) {
      throw new TopologyError(`${at}.type`, `'${type}' built an agent named '${agent.name}' instead of '${name}'; pass the name its constructor gets on to super(name, options)`);
    }
    return agent as AgentProcess;
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
