import type { Logger } from "../logging/logger.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";

/** An agent a runtime hosts, as its transport announces it. */
export interface HostedAgent {
  /** The agent's name: its address on the bus. */
  readonly name: string;
  /** The capability tags it declares (`sendCapable` finds it by them). */
  readonly capabilities: readonly string[];
}

/**
 * A control request a runtime carries out for another runtime: what
 * `runtime.suspend`, `resume` and a status query send, and `"approval"`: a
 * vote on (or a read of) an approval request one of its agents holds, what
 * `runtime.approvals.approve`, `deny` and `get` send.
 */
export type ControlOperation = "suspend" | "resume" | "status" | "approval";

/**
 * What a runtime lends its {@link Transport} when it starts: the way into its
 * agents for what arrives from the bus, and the list of agents to announce.
 */
export interface TransportHost {
  /**
   * Delivers a message that arrived from the bus to the local agent it names,
   * waiting while that agent's mailbox is full. Rejects with
   * `AGENT_NOT_FOUND` when no local agent has the name, `MAILBOX_CLOSED` when it stopped for good.
   */
  deliver(message: Message): Promise<void>;
  /** Hands a reply that arrived from the bus to the local ask waiting for it; one nobody waits for is dropped and counted as late. */
  settleReply(reply: Message): void;
  /**
   * Carries out a control request for an agent of this runtime that arrived
   * from another runtime, checked and decided here as if it were made here
   * (the approver is validated, `authorizeResume` asked, the receipt written by this runtime's sink).
   * Resolves with the answer (`{ status }` for a status query); rejects with the refusal.
   */
  control(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number): Promise<JsonObject>;
  /** The agents this runtime hosts now. */
  agents(): readonly HostedAgent[];
  /** Where the transport reports what nobody else can observe (a malformed or forbidden message from the bus). */
  readonly logger: Logger;
}

/**
 * Carries messages between runtimes in different processes. A runtime with a
 * transport still delivers to its own agents in process; it hands the
 * transport what is addressed to an agent it does not host. `NatsTransport`
 * (`civitas-ts/nats`) is the implementation; the runtime calls these methods,
 * application code does not.
 */
export interface Transport {
  /** Connects and announces the host's agents; `runtime.start()` awaits it before starting the tree. */
  start(host: TransportHost): Promise<void>;
  /** Withdraws the announcements and lets go of the bus; `runtime.stop()` awaits it after the tree stopped. */
  stop(): Promise<void>;
  /** Whether another runtime on the bus hosts an agent named `name`. */
  hosts(name: string): boolean;
  /**
   * Sends a message to an agent another runtime hosts (a request's replies
   * come back through `TransportHost.settleReply`). Rejects with
   * `AGENT_NOT_FOUND` when nobody hosts the recipient.
   */
  send(message: Message, signal?: AbortSignal): Promise<void>;
  /**
   * Sends a reply that no local ask waits for, when it answers a request from
   * another runtime. Returns `false`, sending nothing, when the reply is not
   * for the bus (the runtime then counts it as late).
   */
  forwardReply(reply: Message): boolean;
  /**
   * Sends a control request to the runtime that hosts `name` and resolves
   * with its answer. Rejects with that runtime's refusal (by its code),
   * `AGENT_UNREACHABLE` when no owner answered before the deadline, or
   * `CONTROL_TIMEOUT` when the request was taken and no answer came.
   */
  control(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<JsonObject>;
  /** The next agent on the bus (round-robin) that declares `capability`, or `undefined`. */
  capable(capability: string): string | undefined;
  /** The agents on the bus whose names match the glob `pattern`. */
  match(pattern: string): string[];
  /** Told when an agent joins the runtime after the transport started (a spawn): announce it. */
  added(agent: HostedAgent): void;
  /** Told when an agent leaves the runtime for good (a despawn): withdraw it. */
  removed(name: string): void;
}
