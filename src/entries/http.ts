/**
 * `civitas-ts/http`: the approver inbox — an HTTP API under `/api/v1/` and
 * a web page — as a `node:http` request handler, or on a port of its own.
 * Uses only `node:http`, `node:https` and `node:crypto`.
 *
 * @example
 * ```ts
 * import { serveInbox } from "civitas-ts/http";
 * const inbox = await serveInbox({
 *   runtime,
 *   authenticate: (req) => req.headers["x-forwarded-user"] as string | undefined,
 *   port: 8080,
 * });
 * ```
 * @packageDocumentation
 */
export { createInboxHandler } from "../http/inbox-handler.js";
export type { InboxHandler } from "../http/inbox-handler.js";
export { serveInbox } from "../http/serve-inbox.js";
export type { InboxServer, ServeInboxOptions } from "../http/serve-inbox.js";
export type { Authenticate, InboxAuditOptions, InboxOptions } from "../http/inbox-options.js";
export type { Page } from "../http/paging.js";
export type { ApprovalHistoryEntry, PauseHistoryEntry } from "../http/audit-routes.js";
export type { ListScope } from "../http/scope.js";
export type { ApprovalItem } from "../http/approval-routes.js";
export { CSRF_HEADER } from "../http/csrf.js";
export {
  AuditRecordNotFoundError,
  BodyTooLargeError,
  CrossSiteRequestError,
  EventStreamsFullError,
  InvalidRequestError,
  RouteNotFoundError,
  UnauthenticatedError,
} from "../http/http-errors.js";
