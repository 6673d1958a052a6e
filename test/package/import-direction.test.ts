/**
 * Keeps every import of `src/` pointing down through the layers of
 * docs/architecture.md: a file imports only its own folder and folders of a
 * lower layer, type-only imports and `import()` included. Folders of one
 * layer are peers and import none of each other. With every import between
 * folders pointing strictly down, no circle can span two folders.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/** The layers from the ground up; a folder imports only from layers before its own. */
const LAYERS: readonly (readonly string[])[] = [
  ["errors"],
  ["time"],
  ["logging"],
  ["message"],
  ["approvals"],
  ["mailbox"],
  ["state"],
  ["audit"],
  ["observability"],
  ["bus"],
  ["contracts"],
  ["process"],
  ["supervision"],
  ["runtime"],
  ["sqlite", "postgres", "nats", "http"],
  ["testing"],
  ["cli"],
  ["entries"],
  ["(root)"],
];

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

interface Import {
  readonly from: string;
  readonly to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** The relative imports of `text`, the source of `file` (a path relative to `src/`), as paths relative to `src/`. */
function importsOf(file: string, text: string): Import[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.filter((i) => i.fileName.startsWith("."))
    .map((i) => ({ from: file, to: relative(SRC, resolve(SRC, dirname(file), i.fileName)).replace(/\.js$/, ".ts") }));
}

/** Every relative import of every file under `src/`. */
function imports(): Import[] {
  return sourceFiles(SRC).flatMap((path) => importsOf(relative(SRC, path), readFileSync(path, "utf8")));
}

/** The folder a path relative to `src/` belongs to (`(root)` for `index.ts`). */
function folderOf(path: string): string {
  const parts = path.split(sep);
  return parts.length === 1 ? "(root)" : (parts[0] as string);
}

/** The imports between folders that do not point to a lower layer, as "from -> to" lines. */
function upwardImports(all: readonly Import[]): string[] {
  const layer = new Map(LAYERS.flatMap((folders, i) => folders.map((folder) => [folder, i] as const)));
  return all
    .filter(({ from, to }) => {
      const a = folderOf(from);
      const b = folderOf(to);
      return a !== b && (layer.get(b) ?? Infinity) >= (layer.get(a) ?? -Infinity);
    })
    .map(({ from, to }) => `${from} -> ${to}`);
}

describe("imports of src/ point down through the layers", () => {
  it("every folder of src/ has its place in the layers", () => {
    const placed = new Set(LAYERS.flat());
    const folders = new Set(sourceFiles(SRC).map((file) => folderOf(relative(SRC, file))));
    expect([...folders].filter((folder) => !placed.has(folder)), "add the new folder to LAYERS here and to docs/architecture.md").toEqual([]);
  });

  it("no file imports from a higher layer or a peer folder, not even a type", () => {
    const all = imports();
    expect(all.length).toBeGreaterThan(500);
    expect(upwardImports(all), "each line is an import against the layers of docs/architecture.md").toEqual([]);
  });

  it("the check catches an upward import, a type-only one, a dynamic one and one between peers", () => {
    const planted = [
      "import { Runtime } from '../runtime/runtime.js';",
      "import type { AgentProcess } from '../process/agent-process.js';",
      "const m = await import('../nats/codec.js');",
    ].join("\n");
    const peers = [{ from: "postgres/postgres-state-store.ts", to: "sqlite/sqlite-state-store.ts" }];
    const sound = [...importsOf("runtime/runtime.ts", "import { Mailbox } from '../mailbox/mailbox.js';"), { from: "index.ts", to: "runtime/runtime.ts" }];
    expect(upwardImports([...importsOf("mailbox/mailbox.ts", planted), ...peers, ...sound])).toEqual([
      "mailbox/mailbox.ts -> runtime/runtime.ts",
      "mailbox/mailbox.ts -> process/agent-process.ts",
      "mailbox/mailbox.ts -> nats/codec.ts",
      "postgres/postgres-state-store.ts -> sqlite/sqlite-state-store.ts",
    ]);
  });
});
