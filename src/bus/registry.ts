import { DuplicateNameError, InvalidArgumentError } from "../errors/errors.js";
import { describeValue } from "../errors/civitas-error.js";
import type { Mailbox } from "../mailbox/mailbox.js";
import { globToRegExp } from "./glob.js";

/**
 * What the registry holds of an agent, and all the bus reads of one: an
 * `AgentProcess` is one. A runtime's registry holds its agents as they are
 * (`Registry<AgentProcess>`); the bus and the process layer see them as this.
 * @internal
 */
export interface RegisteredAgent {
  readonly name: string;
  readonly capabilities: readonly string[];
  /** Whether it belongs to a runtime: until then it has no mailbox. */
  readonly attached: boolean;
  readonly mailbox: Mailbox;
}

/** What the registry holds of a supervisor: its name. @internal */
export interface RegisteredSupervisor {
  readonly name: string;
}

/**
 * Names every agent and supervisor of a runtime, and finds agents by name,
 * by glob pattern and by capability tag. Registration outlives restarts: an
 * agent keeps its name and capabilities while its supervisor restarts it.
 * @internal
 */
export class Registry<A extends RegisteredAgent = RegisteredAgent, S extends RegisteredSupervisor = RegisteredSupervisor> {
  /** Told when an agent joins or leaves (a runtime with a transport announces them). */
  watcher: { added(agent: A): void; removed(name: string): void } | undefined;
  private agents = new Map<string, A>();
  private supervisors = new Map<string, S>();
  private readonly capable = new Map<string, A[]>();
  private readonly cursor = new Map<string, number>();
  /** The agent {@link Registry.find} found last, and its name: a call from outside the tree looks its recipient up twice (checked, then delivered). */
  private lastName: string | undefined;
  private lastAgent: A | undefined;
  /** Between {@link Registry.adopt} and {@link Registry.adopted}: only members of the adopted tree register, under names it holds already. */
  private adopting = false;

  /**
   * Takes the names of a whole tree checked beforehand (unique and valid, in
   * the order its members register), so that registering each of them
   * needs neither a check nor a lookup (a lookup in a map of 100,000 names
   * is a cache miss) until {@link Registry.adopted}. Only into an empty
   * registry; each member still registers (its capabilities).
   */
  adopt(agents: Map<string, A>, supervisors: Map<string, S>): void {
    if (this.agents.size > 0 || this.supervisors.size > 0) throw new Error("Registry.adopt needs an empty registry");
    this.agents = agents;
    this.supervisors = supervisors;
    this.adopting = true;
  }

  /** The adopted tree has attached: every registration from now on is checked and inserted. */
  adopted(): void {
    this.adopting = false;
  }

  /** Registers a supervisor under its name (taken already while its tree is adopted). */
  registerSupervisor(supervisor: S): void {
    if (this.adopting) return;
    this.claim(supervisor.name, "supervisor");
    this.supervisors.set(supervisor.name, supervisor);
  }

  /** Registers an agent under its name (taken already while its tree is adopted) and capabilities. */
  register(agent: A): void {
    if (!this.adopting) {
      this.claim(agent.name, "agent");
      this.agents.set(agent.name, agent);
    }
    // Indexed: an agent's capabilities are frozen, and for-of over a frozen array allocates, even optimized.
    const capabilities = agent.capabilities;
    for (let i = 0; i < capabilities.length; i++) {
      const capability = capabilities[i] as string;
      const list = this.capable.get(capability);
      if (list === undefined) this.capable.set(capability, [agent]);
      else list.push(agent);
    }
    this.watcher?.added(agent);
  }

  /** Frees `name` (and, for an agent, its capabilities). */
  release(name: string): void {
    if (name === this.lastName) this.lastName = this.lastAgent = undefined;
    this.supervisors.delete(name);
    const agent = this.agents.get(name);
    if (agent === undefined) return;
    this.agents.delete(name);
    this.watcher?.removed(name);
    for (const capability of agent.capabilities) {
      const before = this.capable.get(capability) ?? [];
      const list = before.filter((a) => a !== agent);
      if (list.length === 0) {
        this.capable.delete(capability);
        this.cursor.delete(capability);
        continue;
      }
      this.capable.set(capability, list);
      // Keep the turn where it was: the agent after the removed one is still next.
      const cursor = this.cursor.get(capability);
      if (cursor !== undefined) this.cursor.set(capability, (before.indexOf(agent) < cursor ? cursor - 1 : cursor) % list.length);
    }
  }

  /** Whether `name` is taken. */
  has(name: string): boolean {
    return this.agents.has(name) || this.supervisors.has(name);
  }

  /** The agent registered as `name`. */
  get(name: string): A | undefined {
    return name === this.lastName ? this.lastAgent : this.agents.get(name);
  }

  /**
   * The agent registered as `name`, kept as the one found last, so that the
   * {@link Registry.get} of its delivery needs no map lookup. For a caller
   * whose lookup a delivery to the same agent follows (`runtime.ask`,
   * `runtime.send`, `runtime.suspend`); an agent's own sends use `get`, as
   * they alternate between recipients more often than not.
   */
  find(name: string): A | undefined {
    const agent = this.agents.get(name);
    if (agent !== undefined) {
      this.lastName = name;
      this.lastAgent = agent;
    }
    return agent;
  }

  /** The supervisor registered as `name`. */
  supervisor(name: string): S | undefined {
    return this.supervisors.get(name);
  }

  /** The names of all registered agents, in registration order. */
  names(): string[] {
    return [...this.agents.keys()];
  }

  /** All registered agents, in registration order. */
  all(): A[] {
    return [...this.agents.values()];
  }

  private claim(name: string, what: string): void {
    assertValidName(name, what);
    if (this.has(name)) {
      throw new DuplicateNameError(name, `${what} name '${name}' is already used in this runtime; names of agents and supervisors must be unique`);
    }
  }

  /** Agents that take messages and whose names match the glob `pattern`, in registration order. */
  match(pattern: string): A[] {
    const regexp = globToRegExp(pattern);
    return this.all().filter((agent) => regexp.test(agent.name) && takesMessages(agent));
  }

  /**
   * The next agent (round-robin) that declares `capability` and takes
   * messages, or `undefined`. An agent that stopped for good (its mailbox is
   * closed) keeps its name until removed, but is passed over.
   */
  withCapability(capability: string): A | undefined {
    const list = this.capable.get(capability);
    if (list === undefined) return undefined;
    const start = this.cursor.get(capability) ?? 0;
    for (let step = 0; step < list.length; step++) {
      const agent = list[(start + step) % list.length] as A;
      if (!takesMessages(agent)) continue;
      this.cursor.set(capability, (start + step + 1) % list.length);
      return agent;
    }
    return undefined;
  }
}

/** Whether `agent` still takes messages: not stopped for good (a restart keeps its mailbox open). */
function takesMessages(agent: RegisteredAgent): boolean {
  return !agent.attached || !agent.mailbox.closed; // an agent not attached yet has no mailbox, and nothing has stopped it
}

/**
 * Names are non-empty strings without whitespace or glob characters, so
 * every name can be addressed exactly and matched by a pattern.
 */
export function assertValidName(name: unknown, what: string): asserts name is string {
  if (typeof name !== "string" || name.length === 0 || name.length > 255 || !plainName(name)) {
    throw new InvalidArgumentError(
      "name",
      `${what} name must be a non-empty string of at most 255 characters without whitespace or glob characters (* ? [ ]), got ${describeValue(name)}`,
    );
  }
}

const NOT_IN_NAMES = /[\s*?[\]]/;

/**
 * Whether `name` holds no whitespace or glob character. Every agent's name is
 * checked (three times on its way into a runtime): printable ASCII, the
 * usual case, is checked a character at a time, which allocates nothing;
 * anything else goes to the regular expression, the definition.
 */
function plainName(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return !NOT_IN_NAMES.test(name);
    if (c === 0x2a || c === 0x3f || c === 0x5b || c === 0x5d) return false; // * ? [ ]
  }
  return true;
}
