import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { checkClock } from "../time/clock.js";
import { durableBacklogOption } from "../process/agent-options.js";
import type { RuntimeOptions } from "./runtime-options.js";

const STORE_METHODS = ["get", "set", "delete", "list", "close"] as const;
const LOGGER_METHODS = ["debug", "info", "warn", "error"] as const;

/**
 * Refuses, with `INVALID_ARGUMENT` naming the option, a runtime option that
 * is given but cannot be what it says (a store without `set`, a clock
 * without `now`), before the runtime touches any agent: a mistake fails at
 * `new Runtime()`, not as a `TypeError` in the middle of a start. Options
 * that are not an object at all are refused the same way.
 * @internal
 */
export function checkRuntimeOptions(options: RuntimeOptions): void {
  if (typeof options !== "object" || (options as unknown) === null) {
    throw new InvalidArgumentError("options", `new Runtime() needs an options object with a root, got ${describeValue(options)}`);
  }
  const { store, clock, logger, auditSink, tracerProvider, signerId, keepAlive, authorizeResume, transport, approvalPolicy, authorizeApproval } = options;
  if (store !== undefined) {
    const what = "a StateStore (durable: boolean; get, set, delete, list, close): InMemoryStateStore, SqliteStateStore from civitas-ts/sqlite, or your own implementation";
    requireMethods("store", store, STORE_METHODS, what);
    if (typeof store.durable !== "boolean") throw new InvalidArgumentError("store", `Runtime option store must be ${what}, got ${describeValue(store)} without a boolean durable`);
  }
  if (clock !== undefined) checkClock(clock, "Runtime", ["now", "setTimeout"]);
  if (logger !== undefined) requireMethods("logger", logger, LOGGER_METHODS, "a Logger (debug, info, warn, error), e.g. silentLogger");
  if (auditSink !== undefined) requireMethods("auditSink", auditSink, ["emit"], "an AuditSink (emit(event)), e.g. MemoryAuditSink");
  if (tracerProvider !== undefined) requireMethods("tracerProvider", tracerProvider, ["getTracer"], "an OpenTelemetry TracerProvider");
  if (signerId !== undefined && (typeof signerId !== "string" || signerId.length === 0)) {
    throw new InvalidArgumentError("signerId", `Runtime option signerId must be a non-empty string naming this runtime in audit events, got ${describeValue(signerId)}`);
  }
  if (keepAlive !== undefined && typeof keepAlive !== "boolean") {
    throw new InvalidArgumentError("keepAlive", `Runtime option keepAlive must be true or false, got ${describeValue(keepAlive)}`);
  }
  if (transport !== undefined) {
    requireMethods("transport", transport, ["start", "stop", "hosts", "send", "forwardReply", "control", "capable", "match", "added", "removed"], "a Transport, e.g. new NatsTransport({ servers }) from civitas-ts/nats");
  }
  if (authorizeResume !== undefined && typeof authorizeResume !== "function") {
    throw new InvalidArgumentError("authorizeResume", `Runtime option authorizeResume must be a function deciding each resume, got ${describeValue(authorizeResume)}`);
  }
  if (approvalPolicy !== undefined && typeof approvalPolicy !== "function") {
    throw new InvalidArgumentError("approvalPolicy", `Runtime option approvalPolicy must be a function deciding each message, got ${describeValue(approvalPolicy)}`);
  }
  durableBacklogOption(options.durableBacklog, "Runtime");
  if (authorizeApproval !== undefined && typeof authorizeApproval !== "function") {
    throw new InvalidArgumentError("authorizeApproval", `Runtime option authorizeApproval must be a function deciding each vote, got ${describeValue(authorizeApproval)}`);
  }
}

function requireMethods(option: string, value: unknown, methods: readonly string[], what: string): void {
  const missing = methods.filter((method) => typeof (value as Record<string, unknown> | null)?.[method] !== "function");
  if (missing.length > 0) {
    throw new InvalidArgumentError(option, `Runtime option ${option} must be ${what}, got ${describeValue(value)} without ${missing.join(", ")}`);
  }
}
