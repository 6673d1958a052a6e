import type { AuditEvent, AuditSink } from "../audit/audit-event.js";
import { silentLogger, type Logger } from "../logging/logger.js";
import type { JsonObject } from "../message/json.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { ProcessStatus } from "../contracts/process-status.js";
import type { RuntimeOptions } from "../runtime/runtime-options.js";
import type { StateStore } from "../state/state-store.js";
import type { Clock } from "../time/clock.js";
import type { LifecycleCommand, LifecycleOutcome } from "./lifecycle-command.js";

/** Options of {@link LifecycleDriver} and {@link runLifecycleCommands}. */
export interface LifecycleDriverOptions {
  /**
   * Builds the agent under test, named `name`; called again for each process
   * restart (a new instance on the same store). Its `handle` receives the
   * business messages (with {@link LIFECYCLE_ID_KEY} added to the payload);
   * crash and self-suspend messages never reach it.
   * @defaultValue a plain `AgentProcess`
   */
  createAgent?: (name: string) => AgentProcess;
  /** The subject's name. @defaultValue "subject" */
  agentName?: string;
  /** The sibling's name. @defaultValue "sibling" */
  siblingName?: string;
  /** The payload of business message `id` (the driver adds {@link LIFECYCLE_ID_KEY}). @defaultValue `{}` */
  payload?: (id: number) => JsonObject;
  /** The type of business messages. @defaultValue "message" */
  messageType?: string;
  /** Shared by every runtime of the scenario. @defaultValue a new `InMemoryStateStore` */
  store?: StateStore;
  /** Shared by every runtime of the scenario. @defaultValue a new {@link TestClock} (it is never advanced) */
  clock?: Clock;
  /** Also receives every log line. @defaultValue none (lines are only recorded) */
  logger?: Logger;
  /** Also receives every audit event. */
  auditSink?: AuditSink;
  /** Passed to every runtime (for example `authorizeResume` or `tracerProvider`). */
  runtimeOptions?: Omit<RuntimeOptions, "root" | "store" | "clock" | "logger" | "auditSink">;
  /** How long (wall time) one command may take to settle before the run fails with `WAIT_TIMEOUT`. @defaultValue 5000 */
  settleTimeoutMs?: number;
  /**
   * Whether to wait, after command `index`, until everything it set off has
   * settled. Answer `false` to let the next command overlap it (a suspend
   * while a message is being handled, a resume during a restart …): the
   * step then records the state of that moment, which the model cannot
   * predict, but every invariant (legal transitions, nothing handled while
   * SUSPENDED, nothing lost or handled twice) must still hold.
   * @defaultValue always `true`
   */
  settleAfter?: (command: LifecycleCommand, index: number) => boolean;
}

/** A business message the subject's `handle` was entered for. */
export interface HandledRecord {
  readonly id: number;
  /** The subject's status when `handle` was entered: RUNNING, always, in a correct runtime. */
  readonly status: ProcessStatus;
  /** Which runtime of the scenario (0, then 1 after the first process restart …). */
  readonly instance: number;
  /** The agent's incarnation within that runtime. */
  readonly incarnation: number;
  /** The step (command index) during which it happened. */
  readonly step: number;
}

/** A status change of the subject. */
export interface ObservedTransition {
  readonly from: ProcessStatus;
  readonly to: ProcessStatus;
  /** Which runtime of the scenario: each process restart makes a new subject instance. */
  readonly instance: number;
  /** The step during which it happened: -1 while starting, `commands.length` while cleaning up. */
  readonly step: number;
}

/** An audit event, with the step during which it was emitted (-1 while starting, `commands.length` while cleaning up). */
export interface ObservedAuditEvent extends AuditEvent {
  readonly step: number;
}

/** Everything {@link runLifecycleCommands} observed. */
export interface LifecycleObservation {
  /** Comparable with `SuspensionModel.run(commands)`. */
  readonly outcome: LifecycleOutcome;
  /** Every entry into the subject's `handle` for a driver message (`crash` messages included), in order. */
  readonly entries: readonly HandledRecord[];
  /** Every status change of the subject, across all its instances. */
  readonly transitions: readonly ObservedTransition[];
  /** The real suspension ids: `outcome.steps[i].suspension === n` means `suspensionIds[n - 1]`. */
  readonly suspensionIds: readonly string[];
  /** Every audit event of the scenario, with the step during which it was emitted. */
  readonly audit: readonly ObservedAuditEvent[];
  /** Every warning and error logged. */
  readonly logs: readonly string[];
}

/**
 * The logger a `LifecycleDriver` gives its runtimes: warnings and errors are
 * recorded in `logs` (the observation's `logs`, as `"warn: …"`), and every
 * line is passed on to `user`, when given.
 * @internal
 */
export function recordingLogger(logs: string[], user: Logger | undefined): Logger {
  const log = (level: "warn" | "error") => (message: string, fields?: Record<string, unknown>) => {
    logs.push(`${level}: ${message}`);
    user?.[level](message, fields);
  };
  const passOn = user ?? silentLogger;
  return { debug: (m, f) => passOn.debug(m, f), info: (m, f) => passOn.info(m, f), warn: log("warn"), error: log("error") };
}
