import type { IncomingMessage, ServerResponse } from "node:http";
import { stderrLogger, type Logger } from "../logging/logger.js";
import { approvalRoutes } from "./approval-routes.js";
import { assetRoutes } from "./assets.js";
import { auditRoutes } from "./audit-routes.js";
import { CsrfGuard } from "./csrf.js";
import { EventStreams } from "./event-stream.js";
import { RouteNotFoundError, UnauthenticatedError } from "./http-errors.js";
import { resolveInboxOptions, type InboxOptions } from "./inbox-options.js";
import { pauseRoutes } from "./pause-routes.js";
import { readJsonObject } from "./request-body.js";
import { sendError, sendJson, writeHead } from "./respond.js";
import { matchRoute, pathSegments, type Route } from "./route.js";
import { ScopeResolver } from "./scope.js";
import { sessionRoute } from "./session-route.js";

/**
 * A request handler for `node:http` (and anything that hands one the raw
 * request and response: Express, Fastify, Hono on Node). `close()` ends its
 * open event streams.
 */
export interface InboxHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Ends every open event stream; requests after it are still answered. */
  close(): void;
}

/**
 * Builds the approver inbox: the HTTP API under `/api/v1/` and the inbox
 * page at `/`, relative to where it is mounted. Every request is
 * authenticated first (401 without an identity); state-changing requests
 * then pass the same-origin and CSRF-token checks (403) and the body limit
 * (413) before anything is read or changed. Refusals answer
 * `{ "error": { "code", "message" } }`. See docs/http.md.
 * @throws {@link InvalidArgumentError} for bad options (a missing `authenticate` among them)
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { createInboxHandler } from "civitas-ts/http";
 * const inbox = createInboxHandler({
 *   runtime,
 *   authenticate: (req) => (req.headers["x-forwarded-user"] as string | undefined),
 * });
 * createServer(inbox).listen(8080, "127.0.0.1");
 * ```
 */
export function createInboxHandler(options: InboxOptions): InboxHandler {
  const resolved = resolveInboxOptions(options);
  const logger = resolved.logger ?? stderrLogger;
  const csrf = new CsrfGuard(resolved.csrfSecret, resolved.allowedOrigins);
  const streams = new EventStreams(resolved.runtime, resolved.maxEventStreams, resolved.keepAliveMs);
  const scopes = new ScopeResolver(resolved.runtime);
  const routes: Route[] = [
    ...assetRoutes(),
    sessionRoute(csrf),
    ...pauseRoutes(resolved.runtime, scopes, resolved.decisionTimeoutMs),
    ...approvalRoutes(resolved.runtime, scopes),
    ...auditRoutes(resolved.audit),
    streams.route(),
  ];

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://inbox.invalid");
    if (redirectToSlash(req, res, url, resolved.basePath)) return;
    const identity = await authenticated(req, resolved.authenticate, logger);
    const method = req.method ?? "GET";
    const path = withinBase(url.pathname, resolved.basePath);
    const found = path === undefined ? undefined : matchRoute(routes, method, pathSegments(path));
    if (found === undefined) throw new RouteNotFoundError(method, url.pathname);
    let body: Record<string, unknown> = {};
    if (found.route.method === "POST") {
      csrf.check(req, identity);
      body = await readJsonObject(req, resolved.maxBodyBytes);
    }
    const result = await found.route.run({ req, res, identity, params: found.params, query: url.searchParams, body });
    if (result !== undefined) sendJson(res, result.status, result.body);
  }

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    answer(req, res).catch((error: unknown) => {
      if (resolved.challenge !== undefined && error instanceof UnauthenticatedError && !res.headersSent) res.setHeader("www-authenticate", resolved.challenge);
      sendError(res, error, logger);
    });
  };
  return Object.assign(handler, { close: () => streams.closeAll() });
}

/**
 * Asks `authenticate`; refuses (401) when it names no one or throws (the
 * throw is logged, never shown).
 */
async function authenticated(req: IncomingMessage, authenticate: InboxOptions["authenticate"], logger: Logger): Promise<string> {
  let identity: unknown;
  try {
    identity = await authenticate(req);
  } catch (error) {
    logger.warn("civitas-ts/http: authenticate() threw; the request was refused with 401", { error });
    throw new UnauthenticatedError();
  }
  if (typeof identity !== "string" || identity.trim() === "") throw new UnauthenticatedError();
  return identity;
}

/** `pathname` below `basePath`, or `undefined` when it is not below it. */
function withinBase(pathname: string, basePath: string): string | undefined {
  if (basePath === "") return pathname;
  return pathname.startsWith(`${basePath}/`) ? pathname.slice(basePath.length) : undefined;
}

/**
 * Mounted under a prefix, the page must be asked for as `/inbox/` so that
 * its relative links resolve under the prefix: a GET of `/inbox` is
 * redirected there (with `basePath`, or Express's `originalUrl`).
 */
function redirectToSlash(req: IncomingMessage, res: ServerResponse, url: URL, basePath: string): boolean {
  if (req.method !== "GET") return false;
  let location: string | undefined;
  if (basePath !== "" && url.pathname === basePath) location = `${basePath}/${url.search}`;
  const original = (req as IncomingMessage & { originalUrl?: unknown }).originalUrl;
  if (basePath === "" && url.pathname === "/" && typeof original === "string") {
    const asked = new URL(original, "http://inbox.invalid");
    if (!asked.pathname.endsWith("/")) location = `${asked.pathname}/${asked.search}`;
  }
  if (location === undefined) return false;
  writeHead(res, 308, { location, "content-length": 0 });
  res.end();
  return true;
}
