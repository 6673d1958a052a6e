/**
 * `npm run docs:screenshots`: renders the inbox demo in headless Chromium
 * (Debian's `chromium`, or CHROMIUM_PATH) and writes the screenshots that
 * docs/http.md shows into docs/images/.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { chromium } from "playwright-core";
import { startInboxDemo } from "./demo.js";

const out = new URL("../../docs/images/", import.meta.url);
mkdirSync(out, { recursive: true });
const executablePath = process.env.CHROMIUM_PATH ?? execFileSync("which", ["chromium"], { encoding: "utf8" }).trim();
const demo = await startInboxDemo(0);
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
try {
  const context = await browser.newContext({ httpCredentials: { username: "ana", password: "demo" }, viewport: { width: 1100, height: 2600 }, colorScheme: "light" });
  const page = await context.newPage();
  await page.goto(demo.inbox.url);
  await page.locator("body[data-ready]").waitFor();
  await page.locator("#live.on").waitFor();
  await page.locator("li.approval").first().locator("details summary").first().click(); // unfold one long value
  // items off screen are not laid out (content-visibility): the tall viewport holds them all
  await page.screenshot({ path: new URL("inbox-pending.png", out).pathname, fullPage: true });
  // ana approves the first stage of one payment, denies a paused agent; then the history
  await page.locator("li.approval").first().getByRole("button", { name: "Approve" }).click();
  await page.locator("li.approval", { hasText: "may still vote: carol" }).waitFor();
  const payer = page.locator('li.pause[data-agent="payer-us"]');
  await payer.getByLabel("Reason (sent with your decision; required to deny)").fill("batch total does not match the ledger");
  await payer.getByRole("button", { name: "Deny" }).click();
  await payer.waitFor({ state: "detached" });
  await page.locator('li.pause[data-agent="payer-eu"]').getByRole("button", { name: "Approve" }).click();
  await page.locator('li.pause[data-agent="payer-eu"]').waitFor({ state: "detached" });
  await page.getByRole("button", { name: "History" }).click();
  await page.locator("#history-rows tr").nth(1).waitFor();
  await page.setViewportSize({ width: 1100, height: 520 });
  await page.screenshot({ path: new URL("inbox-history.png", out).pathname });
  console.log(`wrote ${new URL("inbox-pending.png", out).pathname} and inbox-history.png`);
} finally {
  await browser.close();
  await demo.stop();
}
