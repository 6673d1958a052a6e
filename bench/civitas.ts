/**
 * Loads the civitas-ts API under test.
 *
 * Importing `../src/index.js` through tsx would measure esbuild output built
 * with `keepNames: true`, which wraps every named closure in an
 * `Object.defineProperty(fn, "name", …)` call each time it is created: that
 * costs time on hot paths, and each such closure gets an out-of-object
 * property array (~250 B) — so every named closure an agent holds would add
 * ~250 B to the per-agent heap figure — in code users never run. So by default every file of `tsconfig.build.json`
 * is transpiled one by one, the way `npm run build` emits it (ES module, the
 * build's target, names left alone), into a temporary directory and imported
 * from there. esbuild (installed with tsx) does that in well under a second;
 * without it, TypeScript's own transpiler is used (a few seconds).
 * `--source` imports `../src/index.js` through tsx instead.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type * as AuditEntry from "../src/entries/audit.js";
import type * as NatsEntry from "../src/entries/nats.js";
import type * as PostgresEntry from "../src/entries/postgres.js";
import type * as SqliteEntry from "../src/entries/sqlite.js";
import type * as TestingEntry from "../src/entries/testing.js";
import type * as Civitas from "../src/index.js";

/** The public API of civitas-ts, as `src/index.ts` exports it. */
export type CivitasModule = typeof Civitas;

export interface LoadedCivitas {
  readonly civitas: CivitasModule;
  /** How `src` was turned into JavaScript, for the report header. */
  readonly mode: string;
}

type Transpile = (source: string, file: string) => string;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The `civitas-ts/sqlite` entry point, as `src/entries/sqlite.ts` exports it. */
export type SqliteModule = typeof SqliteEntry;

/** Where {@link loadCivitas} emitted `src/`; `undefined` when it imported `src/` through tsx. */
let emittedSrc: string | undefined;

/**
 * The directory the last {@link loadCivitas} call emitted `src/` into (it
 * holds `index.js` and `entries/`), for a benchmark's child process to load
 * the same code; `undefined` when `src/` was imported through tsx.
 */
export function emittedSource(): string | undefined {
  return emittedSrc;
}

/**
 * The `civitas-ts/sqlite` entry, loaded the same way as the last
 * {@link loadCivitas} call loaded the core (so both share one copy of the
 * runtime's modules). Needs better-sqlite3.
 */
export async function loadSqlite(): Promise<SqliteModule> {
  if (emittedSrc === undefined) return await import("../src/entries/sqlite.js");
  return (await import(pathToFileURL(join(emittedSrc, "entries", "sqlite.js")).href)) as SqliteModule;
}

/** The `civitas-ts/audit` entry point, as `src/entries/audit.ts` exports it. */
export type AuditModule = typeof AuditEntry;

/**
 * The `civitas-ts/audit` entry, loaded the same way as the last
 * {@link loadCivitas} call loaded the core (so both share one copy of the
 * runtime's modules).
 */
export async function loadAudit(): Promise<AuditModule> {
  if (emittedSrc === undefined) return await import("../src/entries/audit.js");
  return (await import(pathToFileURL(join(emittedSrc, "entries", "audit.js")).href)) as AuditModule;
}

/** The `civitas-ts/testing` entry point, as `src/entries/testing.ts` exports it. */
export type TestingModule = typeof TestingEntry;

/**
 * The `civitas-ts/testing` entry, loaded the same way as the last
 * {@link loadCivitas} call loaded the core. Needs fast-check.
 */
export async function loadTesting(): Promise<TestingModule> {
  if (emittedSrc === undefined) return await import("../src/entries/testing.js");
  return (await import(pathToFileURL(join(emittedSrc, "entries", "testing.js")).href)) as TestingModule;
}

/** The `civitas-ts/postgres` entry point, as `src/entries/postgres.ts` exports it. */
export type PostgresModule = typeof PostgresEntry;

/**
 * The `civitas-ts/postgres` entry, loaded the same way as the last
 * {@link loadCivitas} call loaded the core. Needs pg.
 */
export async function loadPostgres(): Promise<PostgresModule> {
  if (emittedSrc === undefined) return await import("../src/entries/postgres.js");
  return (await import(pathToFileURL(join(emittedSrc, "entries", "postgres.js")).href)) as PostgresModule;
}

export async function loadCivitas(fromSource: boolean): Promise<LoadedCivitas> {
  if (fromSource) {
    emittedSrc = undefined;
    return { civitas: await import("../src/index.js"), mode: "src/ through tsx (esbuild with keepNames: slower, more heap per closure)" };
  }
  const started = process.hrtime.bigint();
  const config = readBuildConfig();
  let transpile: Transpile;
  let tool: string;
  let target: string;
  let files: readonly string[];
  try {
    if (config === undefined) throw new Error("tsconfig needs TypeScript to read");
    const esbuild = await import("esbuild");
    const esTarget = config.target;
    transpile = (source, file) => esbuild.transformSync(source, { loader: "ts", format: "esm", target: esTarget, sourcefile: file, keepNames: false }).code;
    tool = `esbuild ${esbuild.version}`;
    target = esTarget;
    files = config.files;
  } catch {
    const ts = (await import("typescript")).default;
    const configPath = join(ROOT, "tsconfig.build.json");
    const read = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
    if (read.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"));
    const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, undefined, configPath);
    const compilerOptions = { ...parsed.options, declaration: false, declarationMap: false, sourceMap: false, inlineSourceMap: false, noEmit: false };
    // The package is "type": "module": a .mts name tells the isolated transpiler to emit ES modules.
    transpile = (source, file) => ts.transpileModule(source, { compilerOptions, fileName: file.replace(/\.ts$/, ".mts") }).outputText;
    tool = `TypeScript ${ts.version}`;
    target = ts.ScriptTarget[parsed.options.target ?? ts.ScriptTarget.ES2022].toLowerCase();
    files = parsed.fileNames;
  }

  const index = emit(files, transpile);
  emittedSrc = dirname(index);
  const civitas = (await import(pathToFileURL(index).href)) as CivitasModule;
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { civitas, mode: `src/ transpiled by ${tool} to ${target} ES modules as the build emits them, no keepNames (${ms.toFixed(0)} ms)` };
}

interface BuildConfig {
  readonly target: string;
  readonly files: readonly string[];
}

/**
 * The build's target and sources, when tsconfig.build.json (and what it
 * extends) is plain JSON that includes only "src"; `undefined` when it takes
 * TypeScript to read it.
 */
function readBuildConfig(): BuildConfig | undefined {
  try {
    let target: unknown;
    let include: unknown;
    for (let path: string | undefined = join(ROOT, "tsconfig.build.json"); path !== undefined; ) {
      const config = JSON.parse(readFileSync(path, "utf8")) as { extends?: unknown; include?: unknown; compilerOptions?: { target?: unknown } };
      target ??= config.compilerOptions?.target;
      include ??= config.include;
      path = typeof config.extends === "string" ? resolve(dirname(path), config.extends) : undefined;
    }
    if (typeof target !== "string" || JSON.stringify(include) !== JSON.stringify(["src"])) return undefined;
    const srcDir = join(ROOT, "src");
    const files = (readdirSync(srcDir, { recursive: true }) as string[])
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
      .map((file) => join(srcDir, file));
    return { target: target.toLowerCase(), files };
  } catch {
    return undefined;
  }
}

/** Writes every source file, transpiled, into a temporary directory removed on exit; returns the path of its index.js. */
function emit(files: readonly string[], transpile: Transpile): string {
  const srcDir = join(ROOT, "src");
  const outRoot = mkdtempSync(join(tmpdir(), "civitas-bench-"));
  process.once("exit", () => rmSync(outRoot, { recursive: true, force: true }));
  // Bare imports (eventemitter3, @opentelemetry/api …) resolve through the project's node_modules.
  symlinkSync(join(ROOT, "node_modules"), join(outRoot, "node_modules"), "dir");
  writeFileSync(join(outRoot, "package.json"), JSON.stringify({ type: "module" }));
  for (const file of files) {
    if (!file.endsWith(".ts") || file.endsWith(".d.ts")) continue;
    const out = join(outRoot, "src", relative(srcDir, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, transpile(readFileSync(file, "utf8"), file));
  }
  return join(outRoot, "src", "index.js");
}

/** The `civitas-ts/nats` entry point, as `src/entries/nats.ts` exports it. */
export type NatsModule = typeof NatsEntry;

/**
 * The `civitas-ts/nats` entry, loaded the same way as the last
 * {@link loadCivitas} call loaded the core. Needs @nats-io/transport-node and @msgpack/msgpack.
 */
export async function loadNats(): Promise<NatsModule> {
  if (emittedSrc === undefined) return await import("../src/entries/nats.js");
  return (await import(pathToFileURL(join(emittedSrc, "entries", "nats.js")).href)) as NatsModule;
}
