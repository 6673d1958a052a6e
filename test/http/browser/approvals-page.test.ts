/**
 * Held actions on the inbox page in headless Chromium: the first approver
 * sees the held payment with its payload (long values folded), approves,
 * and the request moves on to the second stage on every open page; the
 * second approver approves and the agent handles the payment exactly once;
 * a denial's reason reaches the asker.
 */
import type { BrowserContext } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { CivitasError} from "../../../src/index.js";
import { type Message, type Runtime } from "../../../src/index.js";
import { runtimes } from "../../support/runtimes.js";
import { eventually, headerIdentity, inboxes, Treasury, treasuryPolicy } from "../support.js";
import { browserProfiles } from "./chromium.js";

const runtime = runtimes();
const serve = inboxes();

const visitor = browserProfiles();

async function pageOf(identity: string, url: string): Promise<Awaited<ReturnType<BrowserContext["newPage"]>>> {
  const context = await visitor(identity);
  const page = await context.newPage();
  await page.goto(url);
  await page.locator("body[data-ready]").waitFor();
  await page.locator("#live.on").waitFor();
  return page;
}

async function heldPayment(): Promise<{ rt: Runtime; treasury: Treasury; asked: Promise<Message>; url: string }> {
  const treasury = new Treasury("treasury");
  const rt = runtime([treasury], { approvalPolicy: treasuryPolicy });
  await rt.start();
  const asked = rt.ask("treasury", { amountCents: 250_000, to: "acme", invoice: "INV-42", note: "n".repeat(400) }, { type: "pay", timeoutMs: 30_000 });
  asked.catch(() => undefined);
  await eventually(async () => (await rt.approvals.list({ status: "pending" })).length === 1, "the held payment");
  const server = await serve({ runtime: rt, authenticate: headerIdentity });
  return { rt, treasury, asked, url: server.url };
}

describe("held actions on the inbox page", () => {
  it("shows the payload, moves a two-stage rule on live, and the payment is handled exactly once", async () => {
    const { treasury, asked, url } = await heldPayment();
    const ana = await pageOf("ana", url);
    const carol = await pageOf("carol", url);
    const item = ana.locator("li.approval");
    await item.waitFor();
    const payload = item.locator("pre.payload");
    expect(await payload.textContent()).toContain('"amountCents": 250000');
    expect(await payload.textContent()).toContain('"to": "acme"');
    // the 400-character note is folded behind a disclosure
    const fold = payload.locator("details summary");
    expect(await fold.textContent()).toContain("(400 characters, show all)");
    expect(await item.textContent()).toContain("may still vote: ana, ben");
    expect(await item.textContent()).toContain("held pay");

    await item.getByRole("button", { name: "Approve" }).click();
    // both pages show the request in its second stage, waiting for carol
    await ana.locator("li.approval", { hasText: "may still vote: carol" }).waitFor({ timeout: 5000 });
    await carol.locator("li.approval", { hasText: "voted: ana (approve)" }).waitFor({ timeout: 5000 });
    expect(treasury.handled.size).toBe(0);

    await carol.locator("li.approval").getByRole("button", { name: "Approve" }).click();
    await carol.locator("li.approval").waitFor({ state: "detached" });
    await ana.locator("li.approval").waitFor({ state: "detached", timeout: 5000 });
    const reply = await asked;
    expect(reply.payload).toEqual({ paid: 250_000, approvedBy: "carol" });
    expect([...treasury.handled.values()]).toEqual([1]);
  }, 60_000);

  it("sends a denial's reason to the asker", async () => {
    const { treasury, asked, url } = await heldPayment();
    const ben = await pageOf("ben", url);
    const item = ben.locator("li.approval");
    await item.getByLabel("Reason (sent with your decision; required to deny)").fill("acme is not an approved vendor");
    await item.getByRole("button", { name: "Deny" }).click();
    await item.waitFor({ state: "detached" });
    const error = await asked.then(() => undefined, (e: unknown) => e);
    expect((error as CivitasError).code).toBe("APPROVAL_DENIED");
    expect((error as CivitasError).message).toContain("acme is not an approved vendor");
    expect(treasury.handled.size).toBe(0);
  }, 60_000);
});
