import type { CsrfGuard } from "./csrf.js";
import { route, type Route } from "./route.js";

/**
 * `GET /api/v1/session`: who the server says the caller is, and the token
 * the caller sends as `x-civitas-csrf` with every state-changing request.
 * @internal
 */
export function sessionRoute(csrf: CsrfGuard): Route {
  return route("GET", "/api/v1/session", async ({ identity }) => ({ status: 200, body: { identity, csrfToken: csrf.tokenFor(identity) } }));
}
