/**
 * Debian's Chromium driven by playwright-core, for the inbox page's
 * real-browser tests. No browser is downloaded: `.ci/run` installs the
 * `chromium` package when it is missing, and a machine without it fails
 * these tests with one line that says what to do.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { USER_HEADER } from "../support.js";

/** Where Chromium is: `CHROMIUM_PATH`, else the first of Debian's names on PATH. */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv !== undefined && fromEnv !== "") {
    if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} does not exist: point it at a Chromium executable, or unset it and apt-get install -y chromium`);
    return fromEnv;
  }
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      const found = execFileSync("which", [name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
      if (found !== "") return found;
    } catch {
      // not on PATH: try the next name
    }
  }
  throw new Error("no Chromium found for the inbox browser tests: apt-get install -y chromium (Debian), or set CHROMIUM_PATH to a Chromium executable");
}

/** Launches headless Chromium (one per test file; close it in afterAll). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/**
 * One headless Chromium for the test file (launched before its tests, closed
 * after them) and the function that opens a browser profile whose every
 * request carries `identity` in the header the test proxy would set (none:
 * unauthenticated). The profiles a test opened are closed after it.
 */
export function browserProfiles(): (identity?: string) => Promise<BrowserContext> {
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
  });
  return async (identity) => {
    if (browser === undefined) throw new Error("Chromium is not launched: open profiles inside a test");
    const context = await browser.newContext(identity === undefined ? {} : { extraHTTPHeaders: { [USER_HEADER]: identity } });
    contexts.push(context);
    return context;
  };
}
