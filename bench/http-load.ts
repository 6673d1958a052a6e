/**
 * `npm run bench:http`: a bounded loopback load check of the inbox API.
 * One runtime holds 1,000 paused agents; the run lists all 1,000 through
 * `GET /api/v1/agents/suspended` (two pages of 500), then decides 200 of
 * them through `POST /api/v1/agents/{name}/resume`, one request at a time
 * over one keep-alive connection, and reports p50/p99 latency beside a bare
 * `node:http` handler answering a small JSON body in the same run. With
 * Chromium on the machine it also times the inbox page's first render with
 * the 1,000 pauses pending. Everything stays on 127.0.0.1; the loops are
 * bounded. Prints figures, asserts nothing about speed.
 */
import { execFileSync } from "node:child_process";
import { Agent, createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { AgentProcess, ProcessStatus, Runtime, silentLogger, type Message } from "../src/index.js";
import { serveInbox } from "../src/entries/http.js";

const PAUSED = 1000;
const LISTINGS = 50;
const VOTES = 200;
const BARE_REQUESTS = 500;

class Held extends AgentProcess {
  override async handle(message: Message): Promise<void> {
    this.suspend(`approve ${String(message.payload.what)}`);
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function send(url: URL, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) }, agent }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function row(name: string, samples: readonly number[]): string {
  return `${name.padEnd(44)} ${String(samples.length).padStart(5)} ${percentile(samples, 50).toFixed(2).padStart(8)} ${percentile(samples, 99).toFixed(2).padStart(8)}`;
}

async function bare(): Promise<number[]> {
  const body = JSON.stringify({ ok: true });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const samples: number[] = [];
  for (let i = 0; i < BARE_REQUESTS; i++) samples.push(await timed(async () => void (await send(url, "GET", {}))));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return samples;
}

async function pageFirstRender(url: string): Promise<string> {
  let chromiumPath: string;
  try {
    chromiumPath = process.env.CHROMIUM_PATH ?? execFileSync("which", ["chromium"], { encoding: "utf8" }).trim();
  } catch {
    return "page: skipped (no chromium on PATH)";
  }
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  try {
    const context = await browser.newContext({ extraHTTPHeaders: { "x-user": "bench" } });
    const page = await context.newPage();
    const start = performance.now();
    await page.goto(url);
    await page.locator("body[data-ready]").waitFor({ timeout: 30_000 });
    const firstRender = performance.now() - start;
    const shown = await page.locator("li.pause").count();
    const total = await page.locator("#pauses-count").textContent();
    // all 1,000 on screen: "Show more" until none is left
    const startAll = performance.now();
    while (await page.locator("#pauses-more").isVisible()) {
      const before = await page.locator("li.pause").count();
      await page.locator("#pauses-more").dispatchEvent("click"); // the page's own work, without the driver's actionability waits
      await page.locator("li.pause").nth(before).waitFor();
    }
    const all = performance.now() - startAll;
    const allShown = await page.locator("li.pause").count();
    return `page: first render ${firstRender.toFixed(0)} ms (${shown} of ${total ?? "?"} shown); showing all ${allShown} took ${all.toFixed(0)} ms more`;
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const held = Array.from({ length: PAUSED }, (_, i) => new Held(`held-${String(i).padStart(4, "0")}`));
  const runtime = new Runtime({ root: held, logger: silentLogger, keepAlive: false });
  await runtime.start();
  await Promise.all(held.map((a, i) => runtime.send(a.name, { what: `payment ${i}` })));
  while (held.some((a) => a.status !== ProcessStatus.SUSPENDED)) await new Promise((resolve) => setTimeout(resolve, 10));
  const inbox = await serveInbox({ runtime, authenticate: (req) => (req.headers["x-user"] as string | undefined) ?? undefined, logger: silentLogger });
  const base = new URL(inbox.url);
  const who = { "x-user": "bench" };
  const session = JSON.parse((await send(new URL("api/v1/session", base), "GET", who)).text) as { csrfToken: string };

  const page = await pageFirstRender(inbox.url);

  const listings: number[] = [];
  for (let i = 0; i < LISTINGS; i++) {
    listings.push(
      await timed(async () => {
        let cursor: string | undefined;
        let count = 0;
        do {
          const answer = await send(new URL(`api/v1/agents/suspended?limit=500${cursor === undefined ? "" : `&cursor=${cursor}`}`, base), "GET", who);
          const json = JSON.parse(answer.text) as { items: unknown[]; nextCursor?: string };
          count += json.items.length;
          cursor = json.nextCursor;
        } while (cursor !== undefined);
        if (count !== PAUSED) throw new Error(`listed ${count} pauses, expected ${PAUSED}`);
      }),
    );
  }

  const pauses = runtime.listSuspended().slice(0, VOTES);
  const votes: number[] = [];
  for (const pause of pauses) {
    votes.push(
      await timed(async () => {
        const answer = await send(new URL(`api/v1/agents/${pause.name}/resume`, base), "POST", { ...who, "content-type": "application/json", "x-civitas-csrf": session.csrfToken }, JSON.stringify({ suspensionId: pause.suspensionId }));
        if (answer.status !== 200) throw new Error(`resume answered ${answer.status}: ${answer.text}`);
      }),
    );
  }
  if (runtime.listSuspended().length !== PAUSED - VOTES) throw new Error("the votes did not all take effect");

  const baseline = await bare();
  console.log(`${"latency (ms), one request at a time, loopback".padEnd(44)} ${"n".padStart(5)} ${"p50".padStart(8)} ${"p99".padStart(8)}`);
  console.log(row(`list ${PAUSED} pauses (2 pages of 500)`, listings));
  console.log(row(`resume through POST (${VOTES} votes)`, votes));
  console.log(row("bare node:http JSON handler", baseline));
  console.log(page);
  await inbox.close();
  await runtime.stop();
  agent.destroy();
}

await main();
