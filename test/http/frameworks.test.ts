/**
 * The Express, Fastify and Hono snippets of docs/http.md, run verbatim: each
 * is read from the page, written as a module (its imports on top, the rest
 * in a function of `runtime` and `authenticate`), mounted on the real
 * framework listening on a loopback port, and driven through a pause: the
 * page below the prefix, the bare prefix redirected, the list, a resume
 * whose JSON body only the inbox reads, and a 401 without an identity.
 */
import fs from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { serve } from "@hono/node-server";
import type { Express } from "express";
import type { FastifyInstance } from "fastify";
import type { Hono } from "hono";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Authenticate } from "../../src/entries/http.js";
import { ProcessStatus, type Runtime } from "../../src/index.js";
import { runtimes, until } from "../support/runtimes.js";
import { call, headerIdentity, pausedPayer, signIn, USER_HEADER, type Payer } from "./support.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const docs = fs.readFileSync(path.join(root, "docs", "http.md"), "utf8");
// inside the project, so that the snippets' bare imports resolve to its node_modules
const snippetDir = fs.mkdtempSync(path.join(root, "node_modules", ".civitas-snippets-"));
afterAll(() => fs.rmSync(snippetDir, { recursive: true, force: true }));

const runtime = runtimes();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The one ```ts block of docs/http.md that contains `marker`. */
function snippet(marker: string): string {
  const blocks = [...docs.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? "").filter((block) => block.includes(marker));
  expect(blocks, `docs/http.md has one ts block with ${marker}`).toHaveLength(1);
  return blocks[0] ?? "";
}

/**
 * Writes `code` as a module: its `import` lines on top, the rest in the
 * default export `(runtime, authenticate) => result`, and imports it.
 */
async function load<T>(code: string, result: string): Promise<(runtime: Runtime, authenticate: Authenticate) => Promise<T>> {
  const lines = code.split("\n");
  const imports = lines.filter((line) => line.startsWith("import "));
  const body = lines.filter((line) => !line.startsWith("import "));
  const file = path.join(snippetDir, `${result}-${Date.now()}.ts`);
  fs.writeFileSync(file, `${imports.join("\n")}\nexport default async function mount(runtime, authenticate) {\n${body.join("\n")}\nreturn ${result};\n}\n`);
  const module = (await import(/* @vite-ignore */ pathToFileURL(file).href)) as { default: (runtime: Runtime, authenticate: Authenticate) => Promise<T> };
  return module.default;
}

async function listening(server: Server): Promise<string> {
  if (!server.listening) await new Promise<void>((resolve) => server.once("listening", resolve));
  closers.push(() => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** What every framework must let through: the page, the redirect, the API, a decision, a refusal. */
async function drive(origin: string, rt: Runtime, payer: Payer): Promise<void> {
  const alice = { [USER_HEADER]: "alice" };
  const page = await call(origin, "GET", "/inbox/", alice);
  expect([page.status, page.headers["content-type"]]).toEqual([200, "text/html; charset=utf-8"]);
  expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
  const script = await call(origin, "GET", "/inbox/assets/inbox.js", alice);
  expect(script.status).toBe(200);
  const bare = await call(origin, "GET", "/inbox", alice);
  expect([bare.status, bare.headers.location]).toEqual([308, "/inbox/"]);
  const anonymous = await call(origin, "GET", "/inbox/api/v1/agents/suspended");
  expect([anonymous.status, anonymous.json.error?.code]).toEqual([401, "UNAUTHENTICATED"]);

  const approver = await signIn(new URL("inbox/", origin).href, "alice");
  const list = await approver.get("/api/v1/agents/suspended");
  expect(list.json).toMatchObject({ scope: "local", total: 1, items: [{ name: "payer" }] });
  const [pause] = rt.listSuspended();
  const tooBig = await approver.post("/api/v1/agents/payer/resume", { suspensionId: pause?.suspensionId, pad: "x".repeat(10_000) });
  expect([tooBig.status, tooBig.json.error?.code]).toEqual([413, "BODY_TOO_LARGE"]);
  const resumed = await approver.post("/api/v1/agents/payer/resume", { suspensionId: pause?.suspensionId });
  expect(resumed.status).toBe(200);
  await until(() => payer.status !== ProcessStatus.SUSPENDED);
  expect(payer.executions.get("INV-1")).toBe(1);
  expect(payer.state.paid).toMatchObject([{ invoice: "INV-1", approvedBy: "alice" }]);
}

describe("the framework snippets of docs/http.md, run verbatim", () => {
  it("Express: app.use(\"/inbox\", handler)", async () => {
    const mount = await load<Express>(snippet('from "express"'), "app");
    const { rt, payer } = await pausedPayer(runtime, "INV-1");
    const app = await mount(rt, headerIdentity);
    await drive(await listening(app.listen(0, "127.0.0.1")), rt, payer);
  });

  it("Fastify: the raw request and reply under a basePath, the body left to the inbox", async () => {
    const mount = await load<FastifyInstance>(snippet('from "fastify"'), "fastify");
    const { rt, payer } = await pausedPayer(runtime, "INV-1");
    const fastify = await mount(rt, headerIdentity);
    closers.push(() => fastify.close());
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    await drive(`http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}/`, rt, payer);
  });

  it("Hono on @hono/node-server: c.env.incoming / c.env.outgoing and RESPONSE_ALREADY_SENT", async () => {
    const mount = await load<Hono>(snippet('from "hono"'), "app");
    const { rt, payer } = await pausedPayer(runtime, "INV-1");
    const app = await mount(rt, headerIdentity);
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
    await drive(await listening(server), rt, payer);
  });
});
