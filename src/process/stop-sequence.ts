import { RuntimeStateError } from "../errors/errors.js";
import { type JsonObject } from "../message/json.js";
import type { StopOptions } from "../supervision/child.js";
import { settlesWithin } from "../time/deadline.js";
import { nonNegativeInteger } from "./agent-options.js";
import { ProcessStatus } from "./process-status.js";
import type { ProcessRunner } from "./process-runner.js";
import { receiptRecorded, runHook, errorText } from "./hooks.js";

export async function requestStop(r: ProcessRunner, options: StopOptions): Promise<void> {
  const services = r.requireServices();
  const timeoutMs = nonNegativeInteger("timeoutMs", options.timeoutMs ?? r.options.shutdownTimeoutMs);
  r.plan = {
    timeoutMs,
    // A suspended agent is never drained: its queued business is unapproved work.
    drainAll: options.drain === "all" && r.currentStatus !== ProcessStatus.SUSPENDED,
    // "all" is what is queued now: what arrives during the drain (an agent feeding itself, busy senders) waits, as with "current".
    drainEnd: r.mailbox.businessTakenCount + r.mailbox.size,
  };
  r.exit = { kind: "normal", reason: "stopped" };
  r.transition(ProcessStatus.STOPPING);
  r.mailbox.unpark();
  r.wake();
  if (!(await settlesWithin(r.loopDone ?? Promise.resolve(), services.clock, timeoutMs))) {
    services.logger.warn(
      `'${r.agent.name}' did not finish its message within ${timeoutMs} ms; stopping it anyway (its handle() keeps running, its result will be dropped, and a restarted '${r.agent.name}' handles nothing until it returns)`,
    );
    r.generation++;
    // What the abandoned incarnation is still delivering (a result to a full agent) is dropped, not waited for.
    r.results?.abort(new RuntimeStateError("RUNTIME_STOPPED", `'${r.agent.name}' was stopped before this result of its abandoned handler was delivered; it is dropped`));
    // The abandoned handler is no longer "the message being handled": reply() from onStop (or from it) must not answer it.
    r.current = undefined;
    r.span = undefined;
    r.abandoned = r.loopDone;
    r.loopDone = undefined;
  }
  r.finishing = finish(r);
  await r.finishing;
}

/** Ends the incarnation: `onStop`, final status, audit. Runs once per incarnation. */
export async function finish(r: ProcessRunner): Promise<void> {
  const services = r.requireServices();
  const span = services.telemetry.startSpan("civitas.agent.stop", { "civitas.agent.name": r.agent.name });
  r.suspension.deadline?.cancel(); // a pause kept by the stop is armed again by the next start
  // A pause asked for from handle() that the stop came before is kept, as a restart would keep it.
  await r.suspension.keepAskedPause(() => JSON.parse(r.initialState ?? "{}") as JsonObject);
  await runHook(r, "onStop", () => r.agent.onStop(), r.plan?.timeoutMs ?? r.options.shutdownTimeoutMs);
  if (r.currentStatus === ProcessStatus.STOPPING) r.transition(ProcessStatus.STOPPED);
  // Stopped for good while the runtime stops: no one will take what is queued, so senders still
  // waiting for room (an agent not stopped yet) get MAILBOX_CLOSED now instead of hanging their own stop.
  if (services.stopping.aborted) r.close();
  const exit = r.exit;
  services.telemetry.endSpan(span);
  if (exit?.kind !== "crash") {
    // The stop (and so runtime.stop()) resolves once its receipt is recorded.
    await receiptRecorded(r, "agent.stop", services.telemetry.audit("agent.stop", r.agent.name, { reason: exit?.reason ?? "stopped" }));
  }
}

export function crash(r: ProcessRunner, error: unknown): void {
  const services = r.requireServices();
  r.transition(ProcessStatus.CRASHED);
  r.exit = { kind: "crash", error };
  services.logger.error(`'${r.agent.name}' crashed`, { error });
  r.crashRecorded = services.telemetry.audit("agent.crash", r.agent.name, { error: errorText(error) });
}

export function beginSelfStop(r: ProcessRunner, reason: string): void {
  if (r.currentStatus !== ProcessStatus.RUNNING && r.currentStatus !== ProcessStatus.SUSPENDED) return;
  r.transition(ProcessStatus.STOPPING);
  r.exit = { kind: "normal", reason };
}
