/**
 * The package as a user installs it: its metadata, its license, what
 * `npm pack` puts in the tarball (source maps ship with the sources they
 * point at), and the README's install and set-up commands. Reads the built
 * `dist/` (npm test builds before it runs the tests).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

interface PackageJson {
  name: string;
  version: string;
  license: string;
  types: string;
  repository: { type: string; url: string };
  homepage: string;
  bugs: { url: string };
  files: string[];
  exports: Record<string, string | { types?: string }>;
}

const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as PackageJson;

/** The paths `npm pack` would put in the tarball (without running prepack). */
function packedFiles(): string[] {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    shell: process.platform === "win32",
  });
  const [report] = JSON.parse(out) as [{ files: { path: string }[] }];
  return report.files.map((file) => file.path.split(path.sep).join("/"));
}

describe("package.json", () => {
  it("names the repository, homepage and issue tracker, and has a top-level types field matching the main export", () => {
    expect(pkg.repository).toEqual({ type: "git", url: "git+https://github.com/civitas-ts/civitas-ts.git" });
    expect(pkg.homepage).toBe("https://github.com/civitas-ts/civitas-ts#readme");
    expect(pkg.bugs).toEqual({ url: "https://github.com/civitas-ts/civitas-ts/issues" });
    const main = pkg.exports["."];
    expect(typeof main === "object" ? main.types : undefined).toBe("./dist/index.d.ts");
    expect(pkg.types).toBe("./dist/index.d.ts");
  });

  it("is Apache-2.0 and ships the full license text", () => {
    expect(pkg.license).toBe("Apache-2.0");
    expect(pkg.files).toContain("LICENSE");
    const license = readFileSync(path.join(root, "LICENSE"), "utf8");
    expect(license).toMatch(/^\s*Apache License\n\s*Version 2\.0, January 2004\n/);
    for (const clause of ["1. Definitions.", "4. Redistribution.", "9. Accepting Warranty or Additional Liability.", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."]) {
      expect(license).toContain(clause);
    }
    // the canonical text, not another project's copy with its own notices
    expect(license).not.toMatch(/Microsoft|OpenTelemetry|NATS/);
  });
});

describe("npm pack", { timeout: 60_000 }, () => {
  const files = packedFiles();
  const packed = new Set(files);

  it("ships the license, readme, changelog, docs, types and the civitas binary", () => {
    for (const file of ["LICENSE", "README.md", "CHANGELOG.md", "package.json", "docs/messaging.md", "dist/index.js", "dist/index.d.ts", "dist/cli/main.js", "dist/entries/testing.d.ts"]) {
      expect(packed, file).toContain(file);
    }
    expect(files.some((file) => file.startsWith("test/") || file.startsWith("examples/") || file.startsWith("bench/"))).toBe(false);
  });

  it("ships the inbox page's files once, beside the built HTTP entry that serves them", () => {
    for (const file of ["dist/http/assets/index.html", "dist/http/assets/inbox.js", "dist/http/assets/inbox.css", "dist/entries/http.js"]) expect(packed, file).toContain(file);
    expect(files.filter((file) => file.startsWith("src/http/assets/"))).toEqual([]);
  });

  it("ships every source map with the sources it points at, and every built file with its map", () => {
    const maps = files.filter((file) => file.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(0);
    // the inbox page's script is shipped as written, not built from TypeScript
    for (const file of files.filter((f) => f.startsWith("dist/") && !f.startsWith("dist/http/assets/") && (f.endsWith(".js") || f.endsWith(".d.ts")))) {
      const text = readFileSync(path.join(root, file), "utf8");
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(text)?.[1];
      expect(url, `${file} names its source map`).toBeDefined();
      expect(packed, `${file}'s map`).toContain(path.posix.join(path.posix.dirname(file), url!));
    }
    for (const map of maps) {
      const { sources, sourceRoot } = JSON.parse(readFileSync(path.join(root, map), "utf8")) as { sources: string[]; sourceRoot?: string };
      expect(sources.length, map).toBeGreaterThan(0);
      for (const source of sources) {
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(map), sourceRoot ?? "", source));
        expect(packed, `${map} points at ${source}`).toContain(resolved);
      }
    }
  });

  it("ships no TypeScript source that no map points at, and every exported entry point exists", () => {
    for (const file of files.filter((f) => f.startsWith("src/"))) {
      expect(file.endsWith(".ts"), file).toBe(true);
      const built = `dist/${file.slice("src/".length, -".ts".length)}.js`;
      expect(packed, `${file} is built to ${built}`).toContain(built);
    }
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const conditions = typeof target === "string" ? { default: target } : target;
      for (const file of Object.values(conditions)) {
        expect(packed, `exports["${subpath}"] -> ${file}`).toContain(path.posix.normalize(file));
      }
    }
  });
});

describe("the built entries", () => {
  it("can be required (Node.js 20.19+), except civitas-ts/testing, which loads fast-check with a top-level await and is import-only", () => {
    const script = `
      const out = {};
      for (const entry of ["index", "entries/sqlite", "entries/audit", "entries/testing"]) {
        try { out[entry] = Object.keys(require("./dist/" + entry + ".js")).length > 0 ? "ok" : "empty"; }
        catch (error) { out[entry] = error.code; }
      }
      console.log(JSON.stringify(out));`;
    const out = execFileSync(process.execPath, ["-e", script], { cwd: root, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ index: "ok", "entries/sqlite": "ok", "entries/audit": "ok", "entries/testing": "ERR_REQUIRE_ASYNC_MODULE" });
  });
});

describe("README", () => {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const codeBlocks = [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2]!.trim(), at: m.index }));

  it("shows users `npm install civitas-ts` first, right after the introduction", () => {
    const first = codeBlocks[0];
    expect(first?.code).toBe("npm install civitas-ts");
    const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(headings[0]).toBe("Install");
    expect(readme.indexOf("## Install")).toBeLessThan(first!.at);
  });

  it("tells package users where the examples are: the package does not ship examples/, so the README points to the repository", () => {
    expect(pkg.files.some((entry) => entry.startsWith("examples"))).toBe(false);
    const documentation = readme.slice(readme.indexOf("## Documentation"), readme.indexOf("\n## ", readme.indexOf("## Documentation") + 1));
    const intro = documentation.slice(documentation.indexOf("Programs that run"), documentation.indexOf("- `examples/")).replace(/\s+/g, " ");
    const repository = pkg.repository.url.replace(/^git\+/, "").replace(/\.git$/, "");
    expect(intro).toContain("not in the npm package");
    expect(intro).toContain(`git clone ${repository} && cd civitas-ts && npm ci`);
    expect(intro).toContain(`${repository}/tree/main/examples`);
    for (const [, name] of documentation.matchAll(/`(examples\/[^`]+)`/g)) expect(existsSync(path.join(root, name!)), name).toBe(true);
  });

  it("keeps exactly the two checkout commands for contributors in Set up", () => {
    const setUp = readme.slice(readme.indexOf("## Set up"), readme.indexOf("\n## ", readme.indexOf("## Set up") + 1));
    const blocks = [...setUp.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
    expect(blocks).toEqual(["npm ci && npm run demo\nnpm test"]);
    expect(existsSync(path.join(root, "examples", "approval-workflow.ts"))).toBe(true);
  });
});
