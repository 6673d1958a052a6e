import type { IncomingMessage } from "node:http";
import type { AuditLogSource } from "../audit/audit-source.js";
import type { VerifyOptions } from "../audit/verify-audit-log.js";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { Logger } from "../logging/logger.js";
import type { Runtime } from "../runtime/runtime.js";
import type { StateStore } from "../state/state-store.js";

/**
 * Says who sent a request, from what the server trusts: a session cookie it
 * checks, a bearer token it verifies, an identity header a reverse proxy
 * sets (and strips from what clients send). Returns the identity — the
 * approver's name recorded in every decision — or `undefined` (or `null`) to
 * refuse the request with 401. A throw refuses it too, and is logged.
 * Never read it from the request body or the query string.
 */
export type Authenticate = (request: IncomingMessage) => string | null | undefined | Promise<string | null | undefined>;

/** Where the inbox reads the audit log to show a pause's trail and its offline verification. */
export interface InboxAuditOptions extends VerifyOptions {
  /**
   * The log: a `JsonlAuditSink`'s path, or a function that returns what the
   * verifiers read (`() => postgresAuditSink.rows()` for a cluster).
   */
  source: AuditLogSource | (() => AuditLogSource | Promise<AuditLogSource>);
  /** The state store, to cross-check the log against the anchors stored with each agent's state (see `verifySuspension`). */
  store?: Pick<StateStore, "get">;
}

/** Options of {@link createInboxHandler}. */
export interface InboxOptions {
  /** The runtime whose pauses (and approvals) are served. */
  runtime: Runtime;
  /** Says who sent each request; required, there is no anonymous mode. */
  authenticate: Authenticate;
  /** The audit log behind the trail and history routes. @defaultValue none: those routes answer `AUDIT_RECORD_NOT_FOUND` */
  audit?: InboxAuditOptions;
  /**
   * Origins, besides the request's own (`Host`), that may send
   * state-changing requests: `"https://inbox.example.com"` when a proxy
   * rewrites `Host`. @defaultValue none
   */
  allowedOrigins?: readonly string[];
  /**
   * The secret the CSRF tokens are derived from. Give the same one to every
   * replica behind one load balancer. @defaultValue 32 random bytes per handler
   */
  csrfSecret?: string | Uint8Array;
  /** Largest request body accepted, in bytes (413 beyond). @defaultValue 8192 */
  maxBodyBytes?: number;
  /** How long a resume or deny waits for the agent, in ms (504 beyond; it may still take effect). @defaultValue 30000 */
  decisionTimeoutMs?: number;
  /** Most event streams (`GET /api/v1/events`) open at once. @defaultValue 100 */
  maxEventStreams?: number;
  /** How often an idle event stream gets a keep-alive comment, in ms. @defaultValue 15000 */
  keepAliveMs?: number;
  /**
   * The path prefix the handler is mounted under when the framework passes
   * the full URL on (Fastify's `request.raw`, Hono's `c.env.incoming`):
   * `"/inbox"`. Leave it out for `node:http` at the root and for Express's
   * `app.use("/inbox", handler)`, which strips the prefix itself. @defaultValue ""
   */
  basePath?: string;
  /**
   * Sent as `WWW-Authenticate` with every 401, e.g. `Basic realm="inbox"` so
   * that a browser asks for a user name and password. @defaultValue none
   */
  challenge?: string;
  /** Where failures nobody else sees go (a throwing `authenticate`, a 500). @defaultValue warnings and errors to stderr */
  logger?: Logger;
}

function positiveInteger(options: InboxOptions, key: "maxBodyBytes" | "decisionTimeoutMs" | "maxEventStreams" | "keepAliveMs", fallback: number): number {
  const value = options[key];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(key, `createInboxHandler({ ${key} }) must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

/** {@link InboxOptions} with every default filled in. @internal */
export interface ResolvedInboxOptions extends InboxOptions {
  readonly maxBodyBytes: number;
  readonly decisionTimeoutMs: number;
  readonly maxEventStreams: number;
  readonly keepAliveMs: number;
  readonly allowedOrigins: readonly string[];
  readonly basePath: string;
}

/**
 * Checks `options` before anything is served.
 * @throws {@link InvalidArgumentError} naming the bad option
 * @internal
 */
export function resolveInboxOptions(options: InboxOptions): ResolvedInboxOptions {
  if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", `createInboxHandler(options) needs an options object, got ${describeValue(options)}`);
  if (typeof options.runtime !== "object" || options.runtime === null || typeof options.runtime.listSuspended !== "function") {
    throw new InvalidArgumentError("runtime", `createInboxHandler({ runtime }) needs the Runtime whose pauses it serves, got ${describeValue(options.runtime)}`);
  }
  if (typeof options.authenticate !== "function") {
    throw new InvalidArgumentError(
      "authenticate",
      `createInboxHandler({ authenticate }) is required: a function (request) => identity | undefined that says who sent each request (there is no anonymous mode), got ${describeValue(options.authenticate)}`,
    );
  }
  const allowedOrigins = options.allowedOrigins ?? [];
  for (const origin of allowedOrigins) {
    if (typeof origin !== "string" || !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new InvalidArgumentError("allowedOrigins", `createInboxHandler({ allowedOrigins }) takes origins like "https://inbox.example.com" (scheme and host, no path), got ${describeValue(origin)}`);
    }
  }
  if (options.audit !== undefined && (typeof options.audit !== "object" || options.audit === null || options.audit.source === undefined)) {
    throw new InvalidArgumentError("audit", `createInboxHandler({ audit }) needs { source, key } (a JSONL path or a function returning rows, and the log's HMAC key), got ${describeValue(options.audit)}`);
  }
  const basePath = options.basePath ?? "";
  if (typeof basePath !== "string" || (basePath !== "" && !/^(\/[^/?#\s]+)+$/.test(basePath))) {
    throw new InvalidArgumentError("basePath", `createInboxHandler({ basePath }) is "" or a path like "/inbox" (leading slash, no trailing slash), got ${describeValue(basePath)}`);
  }
  return {
    ...options,
    basePath,
    allowedOrigins,
    maxBodyBytes: positiveInteger(options, "maxBodyBytes", 8192),
    decisionTimeoutMs: positiveInteger(options, "decisionTimeoutMs", 30_000),
    maxEventStreams: positiveInteger(options, "maxEventStreams", 100),
    keepAliveMs: positiveInteger(options, "keepAliveMs", 15_000),
  };
}
