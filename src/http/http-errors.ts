import { CivitasError } from "../errors/civitas-error.js";

/** The request carried no identity `authenticate` accepted: nothing was read or changed. */
export class UnauthenticatedError extends CivitasError {
  constructor() {
    super("UNAUTHENTICATED", "this request carries no identity the server's authenticate() accepts; sign in (or send the credentials your deployment expects) and retry");
  }
}

/**
 * A state-changing request that did not come from the inbox page's own
 * origin, or without the session's CSRF token: a cross-site form post, or
 * a script on another site. Nothing was read from its body or changed.
 */
export class CrossSiteRequestError extends CivitasError {
  constructor(why: string) {
    super("CROSS_SITE_REQUEST", `refused a state-changing request: ${why}; send it from the inbox page itself, or from a client that fetched its token from GET /api/v1/session and sends it as the x-civitas-csrf header`);
  }
}

/** A request body larger than the server's `maxBodyBytes`: refused before it was read to the end. */
export class BodyTooLargeError extends CivitasError {
  /** The limit, in bytes. */
  readonly maxBodyBytes: number;
  constructor(maxBodyBytes: number) {
    super("BODY_TOO_LARGE", `the request body is larger than ${maxBodyBytes} bytes; a decision needs only an id and a reason of at most 1,024 characters`);
    this.maxBodyBytes = maxBodyBytes;
  }
}

/** A request that is not what the route takes: a body that is not a JSON object, a bad query parameter, a wrong content type. */
export class InvalidRequestError extends CivitasError {
  constructor(message: string) {
    super("INVALID_REQUEST", message);
  }
}

/** No route has that path (or not for that method). */
export class RouteNotFoundError extends CivitasError {
  constructor(method: string, path: string) {
    super("ROUTE_NOT_FOUND", `no route answers ${method} ${path}; the API lives under /api/v1/ (see docs/http.md)`);
  }
}

/** The audit trail of a pause or approval was asked for, but it is not in the audit log (or the server reads none). */
export class AuditRecordNotFoundError extends CivitasError {
  constructor(message: string) {
    super("AUDIT_RECORD_NOT_FOUND", message);
  }
}

/** The HTTP status each error code answers with; codes not named here answer 500 with no detail. */
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  INVALID_REQUEST: 400,
  UNAUTHENTICATED: 401,
  CROSS_SITE_REQUEST: 403,
  INVALID_APPROVER: 403,
  RESUME_REFUSED: 403,
  APPROVER_NOT_ALLOWED: 403,
  ROUTE_NOT_FOUND: 404,
  AGENT_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  AUDIT_RECORD_NOT_FOUND: 404,
  STALE_APPROVAL: 409,
  IDENTITY_CHANGED: 409,
  APPROVAL_DIGEST_MISMATCH: 409,
  BODY_TOO_LARGE: 413,
  INVALID_ARGUMENT: 422,
  CLUSTER_SCOPE_UNSUPPORTED: 422,
  AUDIT_KEY_MISSING: 503,
  AUDIT_UNREADABLE: 503,
  AUDIT_UNAVAILABLE: 503,
  STORE_UNAVAILABLE: 503,
  STORE_BUSY: 503,
  STORE_CLOSED: 503,
  TRANSPORT_UNAVAILABLE: 503,
  AGENT_UNREACHABLE: 503,
  RUNTIME_NOT_STARTED: 503,
  RUNTIME_STOPPED: 503,
  EVENT_STREAMS_FULL: 503,
  ASK_TIMEOUT: 504,
  CONTROL_TIMEOUT: 504,
};

/** The HTTP status for a library error `code` (500 for a code the API does not answer with on purpose). */
export function statusOf(code: string): number {
  return STATUS_BY_CODE[code] ?? 500;
}

/** The server already holds its `maxEventStreams` open event streams. */
export class EventStreamsFullError extends CivitasError {
  constructor(maxEventStreams: number) {
    super("EVENT_STREAMS_FULL", `this server already holds ${maxEventStreams} open event streams (maxEventStreams); close a tab or raise the limit, then reconnect`);
  }
}
