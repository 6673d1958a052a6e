import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { DEFAULT_PRIORITY_CAPACITY } from "../mailbox/lane.js";
import type { ApprovalPolicy } from "../approvals/approval-types.js";

/** Options every agent accepts as the second constructor argument. */
export interface AgentProcessOptions {
  /** Capacity of the business lane of the mailbox. @defaultValue 1000 */
  mailboxSize?: number;
  /** Capacity of the priority (control) lane of the mailbox. @defaultValue 100 */
  priorityMailboxSize?: number;
  /** How often a message may be retried (`ErrorAction.RETRY`) before the agent crashes. @defaultValue 3 */
  maxRetries?: number;
  /** How long a stop waits for the message in flight, and then for `onStop`. @defaultValue 30000 */
  shutdownTimeoutMs?: number;
  /** Capability tags other agents can address with `sendCapable`. @defaultValue [] */
  capabilities?: readonly string[];
  /**
   * This agent's approval policy, in place of the runtime's
   * (`RuntimeOptions.approvalPolicy`); `null`: none for this agent.
   * @defaultValue the runtime's
   */
  approvalPolicy?: ApprovalPolicy | null;
  /**
   * Whether the business messages accepted while this agent is suspended are
   * written to the state store before their `send` resolves, and handed to
   * it after a restart (docs/durable-suspension.md, "The backlog"). `false`:
   * they wait in memory only, and are lost if the process ends.
   * @defaultValue the runtime's `durableBacklog`, else `true` on a durable store
   */
  durableBacklog?: boolean;
}

/** {@link AgentProcessOptions} with defaults applied and checked. @internal */
export interface ResolvedAgentOptions {
  readonly mailboxSize: number;
  readonly priorityMailboxSize: number;
  readonly maxRetries: number;
  readonly shutdownTimeoutMs: number;
  readonly capabilities: readonly string[];
  /** `undefined`: the runtime's policy; `null`: none. */
  readonly approvalPolicy: ApprovalPolicy | null | undefined;
  /** `undefined`: the runtime's choice. */
  readonly durableBacklog: boolean | undefined;
}

/**
 * Applies defaults and validates an agent's options.
 * @throws {@link InvalidArgumentError} naming the bad option
 * @internal
 */
export function resolveAgentOptions(options: AgentProcessOptions | undefined): ResolvedAgentOptions {
  // Most agents take the defaults: they share one frozen options object.
  if (options === undefined) return DEFAULTS;
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError("options", `agent options must be an object, got ${describeValue(options)}`);
  }
  return hasOwnKeys(options) ? resolve(options) : DEFAULTS;
}

/** `Object.keys(options).length > 0` without the array (an agent is made per call). */
function hasOwnKeys(options: object): boolean {
  for (const key in options) if (Object.hasOwn(options, key)) return true;
  return false;
}

const NO_CAPABILITIES: readonly string[] = Object.freeze([]);

function resolve(options: AgentProcessOptions): ResolvedAgentOptions {
  return Object.freeze({
    mailboxSize: positiveInteger("mailboxSize", options.mailboxSize ?? 1000),
    priorityMailboxSize: positiveInteger("priorityMailboxSize", options.priorityMailboxSize ?? DEFAULT_PRIORITY_CAPACITY),
    maxRetries: nonNegativeInteger("maxRetries", options.maxRetries ?? 3),
    shutdownTimeoutMs: nonNegativeInteger("shutdownTimeoutMs", options.shutdownTimeoutMs ?? 30_000),
    capabilities: options.capabilities === undefined ? NO_CAPABILITIES : Object.freeze(capabilityList(options.capabilities)),
    approvalPolicy: approvalPolicyOption(options.approvalPolicy),
    durableBacklog: durableBacklogOption(options.durableBacklog),
  });
}

const DEFAULTS = resolve({});

function capabilityList(capabilities: readonly string[]): string[] {
  if (!Array.isArray(capabilities) || capabilities.some((c) => typeof c !== "string" || c.length === 0)) {
    throw new InvalidArgumentError("capabilities", `capabilities must be an array of non-empty strings, got ${describeValue(capabilities)}`);
  }
  return [...new Set<string>(capabilities)];
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidArgumentError(name, `${name} must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

/** @internal */
export function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new InvalidArgumentError(name, `${name} must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}

/** Checks a duration such as `timeoutMs`. @internal */
export function durationMs(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(name, `${name} must be a non-negative number of milliseconds, got ${describeValue(value)}`);
  }
  return value;
}

function approvalPolicyOption(policy: unknown): ApprovalPolicy | null | undefined {
  if (policy !== undefined && policy !== null && typeof policy !== "function") {
    throw new InvalidArgumentError("approvalPolicy", `approvalPolicy must be a function deciding each message (or null for none), got ${describeValue(policy)}`);
  }
  return policy as ApprovalPolicy | null | undefined;
}

/** Checks a `durableBacklog` option (an agent's or the runtime's). @internal */
export function durableBacklogOption(value: unknown, owner = "agent"): boolean | undefined {
  if (value !== undefined && typeof value !== "boolean") {
    throw new InvalidArgumentError("durableBacklog", `${owner} option durableBacklog must be true or false (or left out), got ${describeValue(value)}`);
  }
  return value;
}
