import { isLegalTransition, ProcessStatus } from "../contracts/process-status.js";
import type { Runtime } from "../runtime/runtime.js";

/** One `agent.status` event, as {@link recordTransitions} keeps it. */
export interface RecordedTransition {
  /** The agent. */
  readonly agent: string;
  readonly from: ProcessStatus;
  readonly to: ProcessStatus;
}

/** What {@link recordTransitions} returns. */
export interface TransitionRecorder {
  /** Every status change seen so far, in order. */
  readonly transitions: readonly RecordedTransition[];
  /** Stops listening. Idempotent. */
  stop(): void;
}

/**
 * Records the runtime's `agent.status` events (optionally of one agent only)
 * until `stop()`.
 *
 * @example
 * ```ts
 * const recorder = recordTransitions(runtime, { agent: "payer" });
 * await runtime.suspend("payer", "review");
 * recorder.stop();
 * expect(transitionProblems(recorder.transitions)).toEqual([]);
 * ```
 */
export function recordTransitions(runtime: Runtime, options: { agent?: string } = {}): TransitionRecorder {
  const transitions: RecordedTransition[] = [];
  const listener = (agent: string, from: ProcessStatus, to: ProcessStatus): void => {
    if (options.agent === undefined || options.agent === agent) transitions.push({ agent, from, to });
  };
  runtime.on("agent.status", listener);
  return {
    transitions,
    stop: () => void runtime.off("agent.status", listener),
  };
}

/**
 * Checks a sequence of status changes of one or more agents (each agent's in
 * the order they happened) and describes every problem: a change that
 * `isLegalTransition` forbids, or one that does not start where the
 * previous change of that agent ended. A new instance of an agent (a process
 * restart) may begin a fresh chain from INITIALIZING. Empty when all is well.
 */
export function transitionProblems(transitions: ReadonlyArray<{ readonly agent?: string; readonly instance?: number; readonly from: ProcessStatus; readonly to: ProcessStatus }>): string[] {
  const problems: string[] = [];
  const last = new Map<string, { instance: number | undefined; to: ProcessStatus }>();
  transitions.forEach((t, index) => {
    const key = t.agent ?? "";
    const who = t.agent === undefined ? "" : `'${t.agent}' `;
    if (!isLegalTransition(t.from, t.to)) problems.push(`#${index}: ${who}${t.from} -> ${t.to} is not a legal transition`);
    const previous = last.get(key);
    const freshInstance = previous !== undefined && previous.instance !== t.instance && t.from === ProcessStatus.INITIALIZING;
    if (previous !== undefined && previous.to !== t.from && !freshInstance) {
      problems.push(`#${index}: ${who}${t.from} -> ${t.to} does not follow the previous change, which ended in ${previous.to}`);
    }
    last.set(key, { instance: t.instance, to: t.to });
  });
  return problems;
}
