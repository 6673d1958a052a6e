import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { AgentProcess } from "../process/agent-process.js";
import type { AgentFactory, AnyAgentProcess, SpawnOptions } from "../process/dynamic-host.js";

/**
 * Makes the agent `spawn` asked for: `new` for an `AgentProcess` subclass, a
 * plain call for a factory function. A class that does not extend
 * `AgentProcess` is refused (`INVALID_ARGUMENT`, argument `factory`) without
 * being called. What a factory returns is checked by the caller.
 * @internal
 */
export function constructAgent<A extends AnyAgentProcess>(factory: AgentFactory<A>, name: string, options: SpawnOptions | undefined): A {
  const prototype: unknown = factory.prototype;
  const isAgentClass = prototype === AgentProcess.prototype || (typeof prototype === "object" && prototype instanceof AgentProcess);
  if (isAgentClass) return new (factory as new (name: string, options?: SpawnOptions) => A)(name, options);
  if (isClassConstructor(factory)) throw notAnAgentClass(name, factory);
  try {
    return (factory as (name: string, options?: SpawnOptions) => A)(name, options);
  } catch (error) {
    // A class the source text did not reveal (a bound class, say) cannot be called without `new`.
    if (error instanceof TypeError && /without 'new'/.test(error.message)) throw notAnAgentClass(name, factory);
    throw error;
  }
}

function isClassConstructor(value: unknown): boolean {
  return typeof value === "function" && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

function notAnAgentClass(name: string, factory: unknown): InvalidArgumentError {
  return new InvalidArgumentError(
    "factory",
    `spawn('${name}'): ${describeValue(factory)} is a class that does not extend AgentProcess; pass an AgentProcess subclass or a factory function (name, options) => agent`,
  );
}
