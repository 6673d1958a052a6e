/**
 * The Node.js versions package.json's `engines` declares are ones every
 * locked dependency declares it supports: read from package-lock.json, so a
 * dependency update that raises a floor fails here until the floor moves too.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import semver from "semver";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/**
 * Declared ranges that exclude Node 20 although the package runs there: the
 * whole suite (NATS included) runs on Node 20. Each entry names the locked
 * version it was checked for, so an update is looked at again.
 */
const OVERSTATED: Record<string, { version: string; range: string }> = {
  // A random-id generator using globalThis.crypto.getRandomValues (Node 19+); its package.json says ">= 22.x".
  "@nats-io/nuid": { version: "3.0.0", range: ">= 22.x" },
  // Plain CommonJS string parsing (no Node 22 API), used only by fastify's inject (light-my-request), a devDependency for test/http/frameworks.test.ts.
  cookie: { version: "2.0.2", range: ">=22" },
};

function lockedRanges(): { name: string; version: string; range: string }[] {
  return Object.entries(lock.packages).flatMap(([key, entry]) => {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (key === "" || range === undefined) return [];
    return [{ name: key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length), version: entry.version ?? "", range }];
  });
}

describe("the declared Node.js floor (package.json engines)", () => {
  const declared = pkg.engines.node;

  it("is a valid range", () => {
    expect(semver.validRange(declared)).not.toBeNull();
  });

  it("lies inside every locked dependency's engines range", () => {
    const ranges = lockedRanges();
    expect(ranges.length).toBeGreaterThan(50);
    const outside = ranges.filter(({ name, range }) => OVERSTATED[name] === undefined && !semver.subset(declared, range, { includePrerelease: false }));
    expect(outside).toEqual([]);
  });

  it("keeps its exceptions only while they are needed, for the versions they were checked for", () => {
    for (const [name, known] of Object.entries(OVERSTATED)) {
      // only the copies whose range excludes the floor (another copy of the same package may be fine: cookie@0.7 under express)
      const locked = lockedRanges().filter((entry) => entry.name === name && !semver.subset(declared, entry.range, { includePrerelease: false }));
      expect(locked.map(({ version, range }) => ({ version, range }))).toEqual([known]);
      expect(semver.subset(declared, known.range)).toBe(false);
    }
  });

  it("is what the README and the getting-started guide say", () => {
    const readme = readFileSync(path.join(root, "README.md"), "utf8");
    const guide = readFileSync(path.join(root, "docs", "getting-started.md"), "utf8");
    for (const text of [readme, guide]) expect(text).toContain("Node.js 20.19+, 22.13+ or 24 to 26");
    expect(declared).toBe("^20.19.0 || ^22.13.0 || ^24.0.0 || ^25.0.0 || ^26.0.0");
  });
});
