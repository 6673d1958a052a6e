import type { ServerResponse } from "node:http";
import { CivitasError } from "../errors/civitas-error.js";
import type { Logger } from "../logging/logger.js";
import { statusOf } from "./http-errors.js";

/** Headers every answer carries: nothing is sniffed, framed, cached or referred elsewhere. */
const BASE_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
};

/** Writes `headers` plus {@link BASE_HEADERS} and the status. @internal */
export function writeHead(res: ServerResponse, status: number, headers: Readonly<Record<string, string | number>>): void {
  res.writeHead(status, { ...BASE_HEADERS, ...headers });
}

/** Answers `body` as JSON, never cached. @internal */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  writeHead(res, status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

/**
 * Answers `error` as `{ "error": { "code", "message" } }` with the status its
 * code maps to. An error that is not a `CivitasError`, or a code the API does
 * not answer with on purpose, is logged and answered as a bare 500
 * `INTERNAL`: its message may name internals that never leave the server.
 * @internal
 */
export function sendError(res: ServerResponse, error: unknown, logger: Logger): void {
  let status = 500;
  let body = { code: "INTERNAL", message: "the server failed to answer this request; its log says why" };
  if (error instanceof CivitasError) {
    status = statusOf(error.code);
    if (status !== 500) body = { code: error.code, message: error.message };
  }
  if (status === 500) logger.error("civitas-ts/http: a request failed", { error });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A refusal sent before the body was read to the end: close the connection rather than read the rest.
  if (!res.req.complete) res.setHeader("connection", "close");
  sendJson(res, status, { error: body });
}
