import type { TracerProvider } from "@opentelemetry/api";
import type { ApprovalPolicy, AuthorizeApproval } from "../approvals/approval-types.js";
import type { AuditSink } from "../audit/audit-event.js";
import type { Transport } from "../bus/transport.js";
import type { Logger } from "../logging/logger.js";
import type { AgentProcessOptions } from "../process/agent-options.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { StateStore } from "../state/state-store.js";
import type { SupervisedChild } from "../contracts/child.js";
import type { Clock } from "../time/clock.js";
import type { AuthorizeResume } from "../contracts/runtime-services.js";

/** Options of a {@link Runtime}. */
export interface RuntimeOptions {
  /** The tree to run: a supervisor, an agent, or a list of them (wrapped in a ONE_FOR_ONE supervisor named `root`). */
  root: SupervisedChild | readonly SupervisedChild[];
  /** Where checkpointed state lives. @defaultValue a new {@link InMemoryStateStore} (not durable) */
  store?: StateStore;
  /** Where audit events go. @defaultValue none */
  auditSink?: AuditSink;
  /** Identity recorded as `signerId` in audit events. @defaultValue "civitas-runtime" */
  signerId?: string;
  /** OpenTelemetry tracer provider. @defaultValue the globally registered one, if any */
  tracerProvider?: TracerProvider;
  /** Receives what nobody else can observe. @defaultValue warnings and errors to stderr */
  logger?: Logger;
  /** Time source. @defaultValue the system clock */
  clock?: Clock;
  /**
   * Keep the Node process alive from `start()` until `stop()`, as a server's
   * open socket does: restarts, backoff and ask timeouts run on timers that
   * do not hold the process open by themselves. @defaultValue true
   */
  keepAlive?: boolean;
  /** Lets a governance layer refuse a resume (`RESUME_REFUSED`); called only while the agent is SUSPENDED. */
  authorizeResume?: AuthorizeResume;
  /**
   * The policy gate, consulted before each business message reaches an
   * agent's `handle`: allow, deny, or hold the message for approval (see
   * docs/approvals.md). An agent's own `approvalPolicy` option replaces it.
   * @defaultValue none: every message is handled
   */
  approvalPolicy?: ApprovalPolicy;
  /** Lets a governance layer refuse a vote on an approval request (`RESUME_REFUSED`). */
  authorizeApproval?: AuthorizeApproval;
  /**
   * Whether the business messages accepted for a suspended agent are written
   * to the store before `send` resolves and handed to it, in order, after a
   * restart; an agent's own `durableBacklog` option replaces it. `false`:
   * they wait in memory only (docs/durable-suspension.md, "The backlog").
   * @defaultValue `true` when the store is durable (`store.durable`), else `false`
   */
  durableBacklog?: boolean;
  /**
   * Connects this runtime to runtimes in other processes (`NatsTransport`
   * from `civitas-ts/nats`): agents are then addressed by name wherever
   * they run. `start()` connects it before the tree starts; `stop()` lets go
   * of it after the tree stopped. @defaultValue none: in process only
   */
  transport?: Transport;
}

/** Options of {@link Runtime.send}. */
export interface RuntimeSendOptions {
  /** The message type. @defaultValue "message" */
  type?: string;
  /** Discard the message if it waits in the mailbox longer than this. */
  ttlMs?: number;
  /** Aborts a send that waits for room in a full mailbox. */
  signal?: AbortSignal;
}

/** Options of {@link Runtime.ask}. */
export interface RuntimeAskOptions extends RuntimeSendOptions {
  /** How long to wait for the reply. @defaultValue 30000 */
  timeoutMs?: number;
  /** Reject at once with `AGENT_SUSPENDED` when the agent is SUSPENDED, instead of waiting for its resume. @defaultValue false */
  failIfSuspended?: boolean;
}

/** Options of {@link Runtime.fromTopology}: the runtime options plus the agent classes a topology may name. */
export interface FromTopologyOptions extends Omit<RuntimeOptions, "root"> {
  /** Agent classes by the name the topology uses in `type`. */
  agents: AgentClasses;
}

/** Agent classes a topology may name in `type`, by that name. */
export type AgentClasses = Readonly<Record<string, new (name: string, options?: AgentProcessOptions & Record<string, unknown>) => AgentProcess>>;
