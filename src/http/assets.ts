import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { writeHead } from "./respond.js";
import { route, type Route } from "./route.js";

/**
 * The page's policy: its own script and style only, requests only to its
 * own origin, no frames, no forms posted anywhere, no inline code.
 */
const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** The inbox page's files, shipped beside this module (`assets/`), read once on first use. */
const FILES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "inbox.css": "text/css; charset=utf-8",
  "inbox.js": "text/javascript; charset=utf-8",
};

const loaded = new Map<string, Asset>();

function asset(name: string): Asset {
  let found = loaded.get(name);
  if (found === undefined) {
    const body = readFileSync(new URL(`./assets/${name}`, import.meta.url));
    found = { body, type: FILES[name] ?? "application/octet-stream", etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
    loaded.set(name, found);
  }
  return found;
}

function serve(req: IncomingMessage, res: ServerResponse, name: string): undefined {
  const file = asset(name);
  const headers = { "content-type": file.type, etag: file.etag, "cache-control": "no-cache", "content-security-policy": CONTENT_SECURITY_POLICY };
  if (req.headers["if-none-match"] === file.etag) {
    writeHead(res, 304, headers);
    res.end();
    return undefined;
  }
  writeHead(res, 200, { ...headers, "content-length": file.body.length });
  res.end(file.body);
  return undefined;
}

/** The page (`/`) and its script and style (`/assets/…`). @internal */
export function assetRoutes(): Route[] {
  return [
    route("GET", "/", async ({ req, res }) => serve(req, res, "index.html")),
    route("GET", "/assets/inbox.css", async ({ req, res }) => serve(req, res, "inbox.css")),
    route("GET", "/assets/inbox.js", async ({ req, res }) => serve(req, res, "inbox.js")),
  ];
}
