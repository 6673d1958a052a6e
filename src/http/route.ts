import type { IncomingMessage, ServerResponse } from "node:http";
import { InvalidRequestError } from "./http-errors.js";

/** What a route is given. @internal */
export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Who sent the request, as `authenticate` said. */
  readonly identity: string;
  /** The path's `:name` segments, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The JSON object body (state-changing routes only; read after the CSRF checks). */
  readonly body: Readonly<Record<string, unknown>>;
}

/** A JSON answer. @internal */
export interface JsonAnswer {
  readonly status: number;
  readonly body: unknown;
}

/**
 * One route: `GET` routes only read; `POST` routes change state and pass
 * the CSRF checks and the body limit first. A route that answers by itself
 * (an event stream, a page) returns `undefined`.
 * @internal
 */
export interface Route {
  readonly method: "GET" | "POST";
  /** Path segments; `:name` captures one. */
  readonly path: readonly string[];
  readonly run: (context: RouteContext) => Promise<JsonAnswer | undefined>;
}

/** Builds a {@link Route} from a pattern such as `/api/v1/agents/:name/resume`. @internal */
export function route(method: Route["method"], pattern: string, run: Route["run"]): Route {
  return { method, path: pattern.split("/").slice(1), run };
}

/** The path's segments, percent-decoded one by one (so `%2F` stays inside a name). @internal */
export function pathSegments(pathname: string): string[] {
  return pathname
    .split("/")
    .slice(1)
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        throw new InvalidRequestError(`the path segment ${JSON.stringify(segment)} is not valid percent-encoding`);
      }
    });
}

/** The route that takes `method` and `segments`, with its captured params; `undefined` when none does. @internal */
export function matchRoute(routes: readonly Route[], method: string, segments: readonly string[]): { route: Route; params: Record<string, string> } | undefined {
  for (const candidate of routes) {
    if (candidate.method !== method || candidate.path.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < segments.length && matches; i++) {
      const want = candidate.path[i] ?? "";
      const got = segments[i] ?? "";
      if (want.startsWith(":")) {
        if (got === "") matches = false;
        else params[want.slice(1)] = got;
      } else if (want !== got) matches = false;
    }
    if (matches) return { route: candidate, params };
  }
  return undefined;
}
