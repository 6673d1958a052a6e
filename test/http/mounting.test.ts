/**
 * The handler mounted the ways docs/http.md shows: on a `node:http` server
 * of one's own, under a prefix that a framework strips (Express's
 * `app.use("/inbox", handler)` sets `originalUrl`) or passes on whole
 * (`basePath`, as for Fastify and Hono); the page and its assets with their
 * security headers; and the options checked before anything is served.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createInboxHandler } from "../../src/entries/http.js";
import { CivitasError, Runtime } from "../../src/index.js";
import { runtimes } from "../support/runtimes.js";
import { call, headerIdentity, Payer, USER_HEADER } from "./support.js";

const runtime = runtimes();
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); })));
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

const alice = { [USER_HEADER]: "alice" };

describe("mounting", () => {
  it("serves the page, its script and style with a strict content security policy, and answers If-None-Match with 304", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const base = await listen(createInboxHandler({ runtime: rt, authenticate: headerIdentity }));
    const page = await call(base, "GET", "/", alice);
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    expect(page.text).toContain('<script type="module" src="assets/inbox.js"></script>');
    expect(page.text).not.toMatch(/https?:\/\//); // nothing fetched from elsewhere
    const script = await call(base, "GET", "/assets/inbox.js", alice);
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(script.text).not.toMatch(/https?:\/\//);
    const etag = String(script.headers.etag);
    const again = await call(base, "GET", "/assets/inbox.js", { ...alice, "if-none-match": etag });
    expect(again.status).toBe(304);
    expect((await call(base, "GET", "/assets/inbox.css", alice)).headers["content-type"]).toBe("text/css; charset=utf-8");
  });

  it("under a prefix a framework strips (Express's originalUrl), redirects /inbox to /inbox/ and answers the API below it", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const inbox = createInboxHandler({ runtime: rt, authenticate: headerIdentity });
    // what Express's app.use("/inbox", inbox) does: strip the prefix from req.url, keep it in req.originalUrl
    const base = await listen((req, res) => {
      const url = req.url ?? "/";
      if (url !== "/inbox" && !url.startsWith("/inbox/") && !url.startsWith("/inbox?")) {
        res.writeHead(404).end();
        return;
      }
      Object.assign(req, { originalUrl: url, url: url.slice("/inbox".length) || "/" });
      inbox(req, res);
    });
    const bare = await call(base, "GET", "/inbox?x=1", alice);
    expect([bare.status, bare.headers.location]).toEqual([308, "/inbox/?x=1"]);
    expect((await call(base, "GET", "/inbox/", alice)).status).toBe(200);
    const list = await call(base, "GET", "/inbox/api/v1/agents/suspended", alice);
    expect(list.json).toEqual({ scope: "local", total: 0, items: [] });
  });

  it("under a basePath (Fastify, Hono) answers below it, redirects the bare prefix, and 404s outside it", async () => {
    const rt = runtime([new Payer("payer")]);
    await rt.start();
    const base = await listen(createInboxHandler({ runtime: rt, authenticate: headerIdentity, basePath: "/ops/inbox" }));
    const bare = await call(base, "GET", "/ops/inbox", alice);
    expect([bare.status, bare.headers.location]).toEqual([308, "/ops/inbox/"]);
    expect((await call(base, "GET", "/ops/inbox/", alice)).status).toBe(200);
    expect((await call(base, "GET", "/ops/inbox/api/v1/session", alice)).json.identity).toBe("alice");
    const outside = await call(base, "GET", "/api/v1/session", alice);
    expect([outside.status, outside.json.error?.code]).toEqual([404, "ROUTE_NOT_FOUND"]);
  });

  it("refuses to build without authenticate, with a bad option, or without a runtime (INVALID_ARGUMENT)", () => {
    const rt = new Runtime({ root: [new Payer("payer")], keepAlive: false });
    const attempts: [string, () => unknown][] = [
      ["authenticate", () => createInboxHandler({ runtime: rt } as unknown as Parameters<typeof createInboxHandler>[0])],
      ["runtime", () => createInboxHandler({ authenticate: headerIdentity } as unknown as Parameters<typeof createInboxHandler>[0])],
      ["maxBodyBytes", () => createInboxHandler({ runtime: rt, authenticate: headerIdentity, maxBodyBytes: 0 })],
      ["basePath", () => createInboxHandler({ runtime: rt, authenticate: headerIdentity, basePath: "/inbox/" })],
      ["allowedOrigins", () => createInboxHandler({ runtime: rt, authenticate: headerIdentity, allowedOrigins: ["https://x.example/path"] })],
    ];
    for (const [option, attempt] of attempts) {
      let caught: unknown;
      try {
        attempt();
      } catch (error) {
        caught = error;
      }
      expect(caught, option).toBeInstanceOf(CivitasError);
      expect([option, (caught as CivitasError).code, (caught as { argument?: string }).argument]).toEqual([option, "INVALID_ARGUMENT", option]);
    }
  });
});
