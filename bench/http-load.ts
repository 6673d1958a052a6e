/**
 * `npm run bench:http`: a bounded loopback load check of the inbox API.
 * One runtime holds 1,000 pending approvals (held actions: its
 * `approvalPolicy` holds every `pay` message, 10 for each of 100 agents,
 * under a one-stage rule). The run lists all 1,000 through
 * `GET /api/v1/approvals?status=pending` (two pages of 500), then casts 200
 * votes through `POST /api/v1/approvals/{id}/approve` (each one approves its
 * request, and the held message is handled), one request at a time over one
 * keep-alive connection. In the same run a bare `node:http` server does
 * comparable work: it pages the same 1,000 items as JSON, and reads, parses
 * and records a JSON vote; p50/p99 of both and their ratios are printed.
 * With Chromium on the machine it also times the inbox page's first render
 * with the 1,000 approvals pending. Everything stays on 127.0.0.1; every
 * loop is bounded. Prints figures, asserts nothing about speed (it throws
 * only when the API did not do the work: a short list, a vote not taken).
 */
import { execFileSync } from "node:child_process";
import { Agent, createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { AgentProcess, Runtime, silentLogger, type ApprovalPolicy, type Message } from "../src/index.js";
import { serveInbox } from "../src/entries/http.js";

const AGENTS = 100;
const HELD_PER_AGENT = 10;
const PENDING = AGENTS * HELD_PER_AGENT;
const LISTINGS = 30;
const VOTES = 200;
const APPROVER = "bench";

/** Counts what reaches its handler (only approved payments do). */
class Payments extends AgentProcess {
  handled = 0;
  override async handle(_message: Message): Promise<void> {
    this.handled++;
  }
}

const holdEveryPayment: ApprovalPolicy = ({ message }) =>
  message.type === "pay" ? { decision: "require_approval", reason: "payment", rule: { stages: [{ name: "finance", approvers: [APPROVER], min: 1 }] } } : { decision: "allow" };

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
  return `${name.padEnd(48)} ${String(samples.length).padStart(5)} ${percentile(samples, 50).toFixed(2).padStart(8)} ${percentile(samples, 99).toFixed(2).padStart(8)}`;
}

function ratio(name: string, api: readonly number[], bare: readonly number[]): string {
  return `${name.padEnd(48)} p50 ×${(percentile(api, 50) / percentile(bare, 50)).toFixed(1)}, p99 ×${(percentile(api, 99) / percentile(bare, 99)).toFixed(1)}`;
}

/** Pages all of `base`'s `path` (500 at a time) and returns the items. */
async function listAll(base: URL, path: string, headers: Record<string, string>): Promise<{ approvalId: string }[]> {
  const items: { approvalId: string }[] = [];
  let cursor: string | undefined;
  do {
    const answer = await send(new URL(`${path}${path.includes("?") ? "&" : "?"}limit=500${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, base), "GET", headers);
    if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}: ${answer.text}`);
    const json = JSON.parse(answer.text) as { items: { approvalId: string }[]; nextCursor?: string };
    items.push(...json.items);
    cursor = json.nextCursor;
  } while (cursor !== undefined);
  return items;
}

/**
 * The baseline: a bare `node:http` server doing comparable work on the same
 * 1,000 items — paging them as JSON with a cursor, and reading, parsing and
 * recording a JSON vote — without a runtime, authentication or CSRF checks.
 */
async function bare(items: readonly { approvalId: string }[]): Promise<{ listings: number[]; votes: number[] }> {
  const votes = new Map<string, string>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://bare.invalid");
    const reply = (status: number, value: unknown): void => {
      const body = JSON.stringify(value);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    };
    if (req.method === "GET") {
      const limit = Number(url.searchParams.get("limit") ?? 100);
      const from = Number(url.searchParams.get("cursor") ?? 0);
      const page = items.slice(from, from + limit);
      reply(200, { total: items.length, items: page, ...(from + limit < items.length ? { nextCursor: String(from + limit) } : {}) });
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { reason: string };
      const id = url.pathname.split("/")[2] ?? "";
      votes.set(id, body.reason);
      reply(200, items.find((item) => item.approvalId === id) ?? {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const listings: number[] = [];
  for (let i = 0; i < LISTINGS; i++) {
    listings.push(
      await timed(async () => {
        if ((await listAll(base, "list", {})).length !== items.length) throw new Error("the bare server listed too few");
      }),
    );
  }
  const voteTimes: number[] = [];
  for (const item of items.slice(0, VOTES)) {
    voteTimes.push(await timed(async () => void (await send(new URL(`vote/${item.approvalId}`, base), "POST", { "content-type": "application/json" }, JSON.stringify({ reason: "ok" })))));
  }
  if (votes.size !== VOTES) throw new Error("the bare server missed votes");
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return { listings, votes: voteTimes };
}

async function pageFirstRender(url: string): Promise<string> {
  let chromiumPath: string;
  try {
    chromiumPath = process.env.CHROMIUM_PATH ?? execFileSync("which", ["chromium"], { encoding: "utf8" }).trim();
  } catch {
    return "page: not timed (no chromium on PATH; set CHROMIUM_PATH)";
  }
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  try {
    const context = await browser.newContext({ extraHTTPHeaders: { "x-user": APPROVER } });
    const page = await context.newPage();
    const start = performance.now();
    await page.goto(url);
    await page.locator("body[data-ready]").waitFor({ timeout: 60_000 });
    const firstRender = performance.now() - start;
    const shown = await page.locator("#approvals > li").count();
    const total = (await page.locator("#approvals-count").textContent())?.replace(/[()]/g, "");
    // all 1,000 on screen: "Show more" until none is left
    const startAll = performance.now();
    while (await page.locator("#approvals-more").isVisible()) {
      const before = await page.locator("#approvals > li").count();
      await page.locator("#approvals-more").dispatchEvent("click"); // the page's own work, without the driver's actionability waits
      await page.locator("#approvals > li").nth(before).waitFor({ timeout: 60_000 });
    }
    const all = performance.now() - startAll;
    const allShown = await page.locator("#approvals > li").count();
    return `page: first render ${firstRender.toFixed(0)} ms with ${total ?? "?"} approvals pending (${shown} shown); showing all ${allShown} took ${all.toFixed(0)} ms more`;
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const payers = Array.from({ length: AGENTS }, (_, i) => new Payments(`payments-${String(i).padStart(3, "0")}`));
  const runtime = new Runtime({ root: payers, logger: silentLogger, keepAlive: false, approvalPolicy: holdEveryPayment });
  await runtime.start();
  const heldStart = performance.now();
  await Promise.all(payers.flatMap((p) => Array.from({ length: HELD_PER_AGENT }, (_, i) => runtime.send(p.name, { amountCents: 100_000 + i, to: "acme", memo: `invoice ${p.name}/${i}` }, { type: "pay" }))));
  while ((await runtime.approvals.list({ status: "pending" })).length < PENDING) await new Promise((resolve) => setTimeout(resolve, 10));
  const heldMs = performance.now() - heldStart;

  const inbox = await serveInbox({ runtime, authenticate: (req) => (req.headers["x-user"] as string | undefined) ?? undefined, logger: silentLogger });
  const base = new URL(inbox.url);
  const who = { "x-user": APPROVER };
  const session = JSON.parse((await send(new URL("api/v1/session", base), "GET", who)).text) as { csrfToken: string };

  const page = await pageFirstRender(inbox.url);

  const listings: number[] = [];
  let pending: { approvalId: string }[] = [];
  for (let i = 0; i < LISTINGS; i++) {
    listings.push(
      await timed(async () => {
        pending = await listAll(base, "api/v1/approvals?status=pending", who);
      }),
    );
    if (pending.length !== PENDING) throw new Error(`listed ${pending.length} pending approvals, expected ${PENDING}`);
  }

  const votes: number[] = [];
  for (const item of pending.slice(0, VOTES)) {
    votes.push(
      await timed(async () => {
        const answer = await send(new URL(`api/v1/approvals/${item.approvalId}/approve`, base), "POST", { ...who, "content-type": "application/json", "x-civitas-csrf": session.csrfToken }, JSON.stringify({ reason: "ok" }));
        if (answer.status !== 200 || (JSON.parse(answer.text) as { status: string }).status !== "approved") throw new Error(`approve answered ${answer.status}: ${answer.text}`);
      }),
    );
  }
  if ((await runtime.approvals.list({ status: "pending" })).length !== PENDING - VOTES) throw new Error("the votes did not all take effect");
  const handledBy = performance.now() + 30_000;
  while (payers.reduce((sum, p) => sum + p.handled, 0) < VOTES && performance.now() < handledBy) await new Promise((resolve) => setTimeout(resolve, 10));
  const handled = payers.reduce((sum, p) => sum + p.handled, 0);
  if (handled !== VOTES) throw new Error(`${handled} approved payments were handled, expected ${VOTES}`);

  const baseline = await bare(pending);
  console.log(`held ${PENDING} payments (${AGENTS} agents × ${HELD_PER_AGENT}) in ${heldMs.toFixed(0)} ms; ${handled} handled once each after approval`);
  console.log(`${"latency (ms), one request at a time, loopback".padEnd(48)} ${"n".padStart(5)} ${"p50".padStart(8)} ${"p99".padStart(8)}`);
  console.log(row(`inbox: list ${PENDING} approvals (2 pages of 500)`, listings));
  console.log(row("bare node:http: page the same items as JSON", baseline.listings));
  console.log(row(`inbox: approve through POST (${VOTES} votes)`, votes));
  console.log(row("bare node:http: read and record a JSON vote", baseline.votes));
  console.log(ratio("inbox / bare, list", listings, baseline.listings));
  console.log(ratio("inbox / bare, vote", votes, baseline.votes));
  console.log(page);
  await inbox.close();
  await runtime.stop();
  agent.destroy();
}

await main();
