import { settlesWithin } from "../time/deadline.js";
import type { AgentProcess } from "./agent-process.js";
import type { ProcessRunner } from "./process-runner.js";

/**
 * Waits until an audit receipt is recorded by the sink (for a
 * `JsonlAuditSink`: fsync'ed), at most `shutdownTimeoutMs`: a sink that
 * never answers is logged, not waited on forever. No wait without a sink.
 */
export async function receiptRecorded(r: ProcessRunner, event: string, recording: Promise<boolean>): Promise<void> {
  const services = r.requireServices();
  if (!services.telemetry.auditing) return;
  const limitMs = r.options.shutdownTimeoutMs;
  if (!(await settlesWithin(recording, services.clock, limitMs))) {
    services.logger.warn(`audit: the sink did not record '${event}' of '${r.agent.name}' within ${limitMs} ms (the agent's shutdownTimeoutMs); moving on without waiting for it`);
  }
}

/**
 * Runs a hook with a deadline; its failure or hang is logged, never thrown.
 * `undefined` when the agent does not override it: the base class's hooks
 * do nothing, so there is no call, no deadline timer and nothing to wait for.
 */
export function runHook(r: ProcessRunner, hook: "onStop" | "onSuspend" | "onResume" | "onDeny" | "onChildTerminated", fn: () => Promise<unknown>, timeoutMs: number): Promise<boolean> | undefined {
  return overrides(r, hook) ? runHookWithDeadline(r, hook, fn, timeoutMs) : undefined;
}

/** Resolves `true` when the hook returned in time, `false` when it threw or ran past `timeoutMs` (both logged). */
export async function runHookWithDeadline(r: ProcessRunner, hook: string, fn: () => Promise<unknown>, timeoutMs: number): Promise<boolean> {
  const services = r.requireServices();
  r.hooksRunning++;
  const run = (async () => fn())()
    .then(
      () => true,
      (error: unknown) => {
        services.logger.error(`'${r.agent.name}'.${hook} threw`, { error });
        return false;
      },
    )
    .finally(() => r.hooksRunning--);
  if (!(await settlesWithin(run, services.clock, timeoutMs))) {
    services.logger.warn(`'${r.agent.name}'.${hook} did not finish within ${timeoutMs} ms; moving on`);
    return false;
  }
  return await run;
}

/** A hook {@link overrides} is asked about. */
type OverridableHook = "onStart" | "onStop" | "onSuspend" | "onResume" | "onDeny" | "onChildTerminated" | "onApprovalDenied";

/** Whether the agent's class overrides `hook` of the base class (whose hooks are no-ops). */
export function overrides(r: ProcessRunner, hook: OverridableHook): boolean {
  const agent = r.agent;
  return hookOf(agent, hook) !== hookOf(rootPrototype(agent) as AgentProcess, hook);
}

/**
 * `target[hook]`, read by name: a keyed read with the hook's name as its key
 * is one site for every hook and every agent class, which V8 soon makes
 * megamorphic (a generic lookup per pause and per decision); a named read
 * per hook stays a cached one.
 */
function hookOf(agent: AgentProcess, hook: OverridableHook): unknown {
  const target = agent as unknown as Readonly<Record<OverridableHook, unknown>>; // compared, never called
  switch (hook) {
    case "onStart":
      return target.onStart;
    case "onStop":
      return target.onStop;
    case "onSuspend":
      return target.onSuspend;
    case "onResume":
      return target.onResume;
    case "onDeny":
      return target.onDeny;
    case "onChildTerminated":
      return target.onChildTerminated;
    case "onApprovalDenied":
      return target.onApprovalDenied;
  }
}

let agentPrototype: object | undefined;

/** `AgentProcess.prototype`, found once by walking up from an agent (this module imports AgentProcess only as a type). */
function rootPrototype(agent: AgentProcess): object {
  if (agentPrototype !== undefined) return agentPrototype;
  let base: object = Object.getPrototypeOf(agent) as object;
  for (let up = Object.getPrototypeOf(base) as object | null; up !== null && up !== Object.prototype; up = Object.getPrototypeOf(up) as object | null) base = up;
  agentPrototype = base;
  return base;
}

/** How an error reads in an audit receipt. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
