import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { AuditEvent } from "./audit-event.js";
import { nonJsonDetails } from "./audit-row.js";

/**
 * Why `event` cannot become a signed row (a missing string field, details
 * that are not a plain JSON object), or `undefined` when it can. Shared by
 * the chained sinks, which refuse such an event before writing anything.
 * @internal
 */
export function auditEventProblem(event: AuditEvent): InvalidArgumentError | undefined {
  for (const field of ["event", "ts", "agent", "signerId"] as const) {
    if (typeof event?.[field] !== "string") {
      return new InvalidArgumentError(field, `an audit event needs a string ${field}, got ${describeValue(event?.[field])}`);
    }
  }
  if (typeof event.details !== "object" || event.details === null || Array.isArray(event.details)) {
    return new InvalidArgumentError("details", `audit event '${event.event}' for '${event.agent}' needs details that are a JSON object, got ${describeValue(event.details)}`);
  }
  const bad = nonJsonDetails(event.details);
  if (bad !== undefined) {
    return new InvalidArgumentError("details", `audit event '${event.event}' for '${event.agent}' has details that are not plain JSON at ${bad}`);
  }
  return undefined;
}
