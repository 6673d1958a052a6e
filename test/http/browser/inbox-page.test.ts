/**
 * The inbox page in a real browser (Debian's Chromium, headless, driven by
 * playwright-core): an approver sees a paused agent, decides it with the
 * mouse or the keyboard, the agent acts exactly once, the page follows live
 * changes without a reload; a denial's reason reaches the sender; the
 * history shows each decision verified; an unauthenticated visitor and a
 * cross-site form post are refused.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../../src/entries/audit.js";
import { ProcessStatus, type Runtime } from "../../../src/index.js";
import { runtimes, until } from "../../support/runtimes.js";
import { scratch } from "../../support/scratch.js";
import { headerIdentity, Inbox, inboxes, LIMIT_CENTS, Payer } from "../support.js";
import { browserProfiles } from "./chromium.js";

const KEY = "browser-test-key";
const { tempDir, track } = scratch("civitas-http-browser-");
const runtime = runtimes();
const serve = inboxes();

const visitor = browserProfiles();

async function world(): Promise<{ rt: Runtime; payer: Payer; other: Payer; requester: Inbox; url: string; log: string }> {
  const log = path.join(tempDir(), "audit.jsonl");
  const sink = track(new JsonlAuditSink(log, { key: KEY }));
  const payer = new Payer("payer");
  const other = new Payer("other");
  const requester = new Inbox("requester");
  const rt = runtime([payer, other, requester], { auditSink: sink });
  await rt.start();
  await rt.send("payer", { invoice: "INV-7", cents: LIMIT_CENTS * 5, notify: "requester" });
  await until(() => payer.status === ProcessStatus.SUSPENDED);
  const server = await serve({ runtime: rt, authenticate: headerIdentity, audit: { source: log, key: KEY } });
  return { rt, payer, other, requester, url: server.url, log };
}

describe("the inbox page", () => {
  it("shows a paused agent, takes an approval, and the agent pays exactly once while a second approver's page follows live", async () => {
    const { rt, payer, other, url } = await world();
    const alicePage = await (await visitor("alice@finance")).newPage();
    await alicePage.goto(url);
    const item = alicePage.locator('li.pause[data-agent="payer"]');
    await item.waitFor();
    expect(await alicePage.locator("#identity").textContent()).toBe("alice@finance");
    expect(await item.locator("h4").textContent()).toContain("payer");
    expect(await item.textContent()).toContain("approve payment INV-7: 5000.00");
    expect(await item.textContent()).toContain(rt.listSuspended()[0]?.suspensionId ?? "missing");
    await alicePage.locator("#live.on").waitFor();

    const bobPage = await (await visitor("bob@finance")).newPage();
    await bobPage.goto(url);
    await bobPage.locator('li.pause[data-agent="payer"]').waitFor();
    await bobPage.locator("#live.on").waitFor();

    // a pause that happens while the pages are open shows up on both without a reload
    await rt.send("other", { invoice: "INV-8", cents: LIMIT_CENTS * 2 });
    await until(() => other.status === ProcessStatus.SUSPENDED);
    await alicePage.locator('li.pause[data-agent="other"]').waitFor({ timeout: 5000 });
    await bobPage.locator('li.pause[data-agent="other"]').waitFor({ timeout: 5000 });

    await item.getByRole("button", { name: "Approve" }).click();
    await item.waitFor({ state: "detached" });
    // bob's page drops it live
    await bobPage.locator('li.pause[data-agent="payer"]').waitFor({ state: "detached", timeout: 5000 });
    expect(payer.status).toBe(ProcessStatus.RUNNING);
    expect(payer.executions.get("INV-7")).toBe(1);
    expect(payer.state.paid).toEqual([{ invoice: "INV-7", cents: LIMIT_CENTS * 5, approvedBy: "alice@finance" }]);
    expect(await bobPage.locator("#pauses-count").textContent()).toBe("(1)");
  }, 60_000);

  it("takes a denial with a reason from the keyboard alone; the reason reaches the sender and the history shows it verified", async () => {
    const { payer, requester, url } = await world();
    const page = await (await visitor("bob@finance")).newPage();
    await page.goto(url);
    const item = page.locator('li.pause[data-agent="payer"]');
    await item.waitFor();
    // a deny without a reason is stopped on the page, nothing is sent
    await item.getByRole("button", { name: "Deny" }).click();
    expect(await item.locator(".error").textContent()).toContain("Write the reason for the denial first");
    expect(payer.status).toBe(ProcessStatus.SUSPENDED);
    // the reason box is labelled, so a screen reader and getByLabel find it; then Tab to Deny and press Enter
    const reason = item.getByLabel("Reason (sent with your decision; required to deny)");
    await reason.focus();
    await page.keyboard.type("vendor not on the approved list");
    await page.keyboard.press("Tab");
    expect(await page.locator(":focus").textContent()).toBe("Approve");
    await page.keyboard.press("Tab");
    expect(await page.locator(":focus").textContent()).toBe("Deny");
    await page.keyboard.press("Enter");
    await item.waitFor({ state: "detached" });
    await until(() => requester.received.length === 1, "the denial reaching the sender");
    expect(requester.received[0]?.payload).toEqual({ invoice: "INV-7", decider: "bob@finance", reason: "vendor not on the approved list" });
    expect(payer.executions.size).toBe(0);

    await page.getByRole("button", { name: "History" }).click();
    const row = page.locator("#history-rows tr").first();
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    expect(cells.slice(1)).toEqual(["payer (paused agent)", "denied", "bob@finance", "vendor not on the approved list", "verified"]);
    expect(await page.locator("#history-chain").textContent()).toMatch(/^Audit chain intact: \d+ rows verified\.$/);
  }, 60_000);

  it("shows a pause's audit trail with its verification status", async () => {
    const { url } = await world();
    const page = await (await visitor("alice")).newPage();
    await page.goto(url);
    const item = page.locator('li.pause[data-agent="payer"]');
    await item.getByRole("button", { name: "Audit trail" }).click();
    await item.locator(".trail-box .status-pending").waitFor();
    expect(await item.locator(".trail-box").textContent()).toContain("agent.suspend");
    expect(await item.getByRole("button", { name: "Audit trail" }).getAttribute("aria-expanded")).toBe("true");
  }, 60_000);

  it("refuses an unauthenticated visitor with 401 and shows nothing of the inbox", async () => {
    const { url } = await world();
    const page = await (await visitor()).newPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(401);
    const text = (await page.textContent("body")) ?? "";
    expect(JSON.parse(text)).toMatchObject({ error: { code: "UNAUTHENTICATED" } });
    expect(text).not.toContain("payer");
  }, 60_000);

  it("refuses a cross-site form post and a cross-site fetch, even with the approver's credentials attached", async () => {
    const { rt, payer, url } = await world();
    const [pause] = rt.listSuspended();
    const target = new URL("api/v1/agents/payer/resume", url).href;
    // another origin (another port) that tries to approve through the approver's browser
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><form method="post" action="${target}"><input name="suspensionId" value="${pause?.suspensionId ?? ""}"></form><button id="go" onclick="document.forms[0].submit()">go</button>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    try {
      const page = await (await visitor("alice")).newPage();
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      const fetched = await page.evaluate(async (href) => {
        try {
          const r = await fetch(href, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
          return `status ${r.status}`;
        } catch (error) {
          return `failed: ${String(error)}`;
        }
      }, target);
      expect(fetched).toMatch(/^failed: TypeError/);
      const [response] = await Promise.all([page.waitForNavigation(), page.click("#go")]);
      expect(response?.status()).toBe(403);
      expect(JSON.parse((await page.textContent("body")) ?? "")).toMatchObject({ error: { code: "CROSS_SITE_REQUEST" } });
      expect(payer.status).toBe(ProcessStatus.SUSPENDED);
      expect(rt.listSuspended()).toEqual([pause]);
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
  }, 60_000);
});
