import { globToRegExp } from "../bus/glob.js";
import type { JsonObject } from "../message/json.js";

/** An agent another runtime announced. @internal */
export interface RemoteAgent {
  readonly name: string;
  readonly capabilities: readonly string[];
  readonly capabilityMetadata: JsonObject;
}

/**
 * The agents other runtimes on the bus announced (`_agency.register`) and
 * have not withdrawn (`_agency.deregister`), with a round-robin turn per
 * capability, as the local registry keeps for local agents.
 * @internal
 */
export class RemoteDirectory {
  private readonly agents = new Map<string, RemoteAgent>();
  private readonly turn = new Map<string, number>();

  /** Records `agent`; returns whether its name was new. */
  add(agent: RemoteAgent): boolean {
    const isNew = !this.agents.has(agent.name);
    this.agents.set(agent.name, agent);
    return isNew;
  }

  /** Forgets the agent named `name`. */
  remove(name: string): void {
    this.agents.delete(name);
  }

  /** Whether an agent named `name` was announced. */
  has(name: string): boolean {
    return this.agents.has(name);
  }

  /** The next agent (round-robin, in announcement order) declaring `capability`. */
  capable(capability: string): string | undefined {
    const names: string[] = [];
    for (const agent of this.agents.values()) if (agent.capabilities.includes(capability)) names.push(agent.name);
    if (names.length === 0) return undefined;
    const turn = (this.turn.get(capability) ?? 0) % names.length;
    this.turn.set(capability, turn + 1);
    return names[turn];
  }

  /** The announced names matching the glob `pattern`. */
  match(pattern: string): string[] {
    const regexp = globToRegExp(pattern);
    return [...this.agents.keys()].filter((name) => regexp.test(name));
  }

  /** Every announced name. */
  names(): string[] {
    return [...this.agents.keys()];
  }
}
