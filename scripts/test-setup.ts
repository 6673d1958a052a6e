/**
 * Makes the machine ready for `npm test`, before any suite runs: PostgreSQL
 * and NATS (with JetStream) answer on the ports the tests use, started here
 * when the machine has them but they are down, and the Python peer's packages
 * (nats-py, msgpack) sit in a project-local virtual environment, and a
 * Chromium for the inbox page's browser tests is there. When
 * something cannot be provided it stops at once with one line naming what is
 * missing and the command that provides it.
 *
 * Usage: `tsx scripts/test-setup.ts [--only postgres|nats|python|chromium]...
 * [--nats-port N] [--state-dir DIR]` (the options exist for this script's
 * own test: the defaults are what the suites use).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync } from "node:fs";
import { connect as netConnect } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import pg from "pg";

import { PYTHON_PACKAGES, testPython } from "../test/support/test-python.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Thrown for a missing prerequisite: its message is the one line printed. */
class Missing extends Error {}

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, host);
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function waitForPort(host: string, port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await answers(host, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** The absolute path of `command` on PATH, or undefined. */
function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir.length > 0 && existsSync(path.join(dir, command))) return path.join(dir, command);
  }
  return undefined;
}

async function ensurePostgres(): Promise<void> {
  const url = new URL(process.env.CIVITAS_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test");
  const host = url.hostname;
  const port = Number(url.port || 5432);
  if (!(await answers(host, port))) {
    const ctl = onPath("pg_ctlcluster");
    const versions = existsSync("/etc/postgresql") ? readdirSync("/etc/postgresql") : [];
    if (ctl === undefined || versions.length === 0) {
      throw new Missing(`PostgreSQL does not answer on ${host}:${port}: install and start it (apt-get install postgresql && pg_ctlcluster <version> main start), or set CIVITAS_TEST_POSTGRES`);
    }
    console.error(`test setup: starting PostgreSQL ${versions.join(", ")}`);
    for (const version of versions) spawnSync(ctl, ["--skip-systemctl-redirect", version, "main", "start"], { stdio: "ignore" });
    if (!(await waitForPort(host, port, 30_000))) {
      throw new Missing(`PostgreSQL does not answer on ${host}:${port} after pg_ctlcluster start: see its log (ls /var/log/postgresql)`);
    }
  }
  await ensureDatabase(url);
}

/** The tests create schemas in the database of the URL: create the database when it does not exist yet. */
async function ensureDatabase(url: URL): Promise<void> {
  const probe = new pg.Client({ connectionString: url.href, connectionTimeoutMillis: 5000 });
  try {
    await probe.connect();
    return;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== "3D000") {
      throw new Missing(`PostgreSQL at ${url.host} refused ${url.href} (${(error as Error).message}): allow it (trust for local connections in pg_hba.conf) or set CIVITAS_TEST_POSTGRES`);
    }
  } finally {
    await probe.end().catch(() => undefined);
  }
  const database = url.pathname.slice(1);
  const admin = new URL(url.href);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.href, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    console.error(`test setup: creating database ${database}`);
    await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
  } catch (error) {
    throw new Missing(`database "${database}" does not exist and could not be created (${(error as Error).message}): run createdb -U ${url.username || "postgres"} ${database}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureNats(stateDir: string, port: number): Promise<void> {
  // The suites also start nats-servers of their own (test/nats/support/nats-server.ts), so it must be on PATH either way.
  const server = onPath("nats-server");
  if (server === undefined) {
    throw new Missing("nats-server is not on PATH: install it (apt-get install nats-server; Debian puts it in /usr/sbin) or add its folder to PATH");
  }
  if (!(await answers("127.0.0.1", port))) {
    const dataDir = path.join(stateDir, "nats");
    mkdirSync(dataDir, { recursive: true });
    console.error(`test setup: starting nats-server with JetStream on 127.0.0.1:${port} (data in ${dataDir})`);
    const log = openSync(path.join(stateDir, `nats-${port}.log`), "a");
    const pidFile = path.join(stateDir, `nats-${port}.pid`);
    const child = spawn(server, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dataDir, "-P", pidFile], { detached: true, stdio: ["ignore", log, log] });
    child.unref();
    if (!(await waitForPort("127.0.0.1", port, 15_000))) {
      throw new Missing(`nats-server did not start on 127.0.0.1:${port}: see ${path.join(stateDir, `nats-${port}.log`)}`);
    }
  }
  const connection = await natsConnect({ servers: `127.0.0.1:${port}`, timeout: 5000 });
  try {
    await (await jetstreamManager(connection)).getAccountInfo();
  } catch {
    throw new Missing(`NATS on 127.0.0.1:${port} has no JetStream: restart it with JetStream on (nats-server -js)`);
  } finally {
    await connection.close();
  }
}

/** A folder of local wheels holding nats-py (a machine without the registry ships them), or undefined. */
function localWheels(): string | undefined {
  const holdsWheel = (dir: string): boolean => {
    try {
      return readdirSync(dir).some((file) => file.startsWith("nats_py-") && file.endsWith(".whl"));
    } catch {
      return false;
    }
  };
  const named = [process.env.CIVITAS_PIP_WHEELS, ...(process.env.PIP_FIND_LINKS ?? "").split(/\s+/)];
  const found = named.find((dir) => dir !== undefined && dir.length > 0 && holdsWheel(dir));
  if (found !== undefined) return found;
  const search = (dir: string, depth: number): string | undefined => {
    if (holdsWheel(dir)) return dir;
    if (depth === 0) return undefined;
    let entries: string[];
    try {
      entries = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    } catch {
      return undefined;
    }
    for (const entry of entries) {
      const hit = search(path.join(dir, entry), depth - 1);
      if (hit !== undefined) return hit;
    }
    return undefined;
  };
  return search("/opt", 2);
}

function ensurePython(stateDir: string): void {
  const python = testPython(stateDir);
  const imports = ["-c", `import ${PYTHON_PACKAGES.map((p) => p.module).join(", ")}`];
  if (existsSync(python) && spawnSync(python, imports).status === 0) return;
  if (onPath("python3") === undefined) {
    throw new Missing("python3 is not on PATH: install Python 3 (apt-get install python3 python3-venv)");
  }
  const venv = path.dirname(path.dirname(python));
  console.error(`test setup: preparing ${venv} with ${PYTHON_PACKAGES.map((p) => p.name).join(" and ")}`);
  const made = spawnSync("python3", ["-m", "venv", venv], { encoding: "utf8" });
  if (made.status !== 0) {
    throw new Missing(`python3 -m venv ${venv} failed (${lastLine(made.stderr)}): install the venv module (apt-get install python3-venv)`);
  }
  const wheels = localWheels();
  const source = wheels === undefined ? [] : ["--no-index", "--find-links", wheels];
  const names = PYTHON_PACKAGES.map((p) => p.name);
  const installed = spawnSync(python, ["-m", "pip", "install", "--quiet", ...source, ...names], { encoding: "utf8" });
  if (installed.status !== 0 || spawnSync(python, imports).status !== 0) {
    throw new Missing(`pip could not install ${names.join(" ")} (${lastLine(installed.stderr)}): run ${python} -m pip install ${names.join(" ")}`);
  }
}

/** Chromium for the browser tests: `CHROMIUM_PATH`, else Debian's `chromium` on PATH (the tests look in the same places). */
function ensureChromium(): void {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv !== undefined && fromEnv !== "") {
    if (!existsSync(fromEnv)) throw new Missing(`CHROMIUM_PATH=${fromEnv} does not exist: point it at a Chromium executable, or unset it and run apt-get install -y chromium`);
    return;
  }
  if (onPath("chromium") === undefined && onPath("chromium-browser") === undefined) {
    throw new Missing("no Chromium for the inbox page's browser tests: apt-get install -y chromium (Debian), or set CHROMIUM_PATH to a Chromium executable");
  }
}

function lastLine(text: string | null): string {
  return (text ?? "").trim().split("\n").pop() ?? "";
}

async function main(): Promise<void> {
  const only = process.argv.flatMap((arg, i) => (process.argv[i - 1] === "--only" ? [arg] : []));
  const wants = (part: string): boolean => only.length === 0 || only.includes(part);
  const stateDir = path.resolve(option("--state-dir") ?? path.join(repoRoot, ".test-env"));
  mkdirSync(stateDir, { recursive: true });
  try {
    if (wants("nats")) await ensureNats(stateDir, Number(option("--nats-port") ?? 4222));
    if (wants("postgres")) await ensurePostgres();
    if (wants("python")) ensurePython(stateDir);
    if (wants("chromium")) ensureChromium();
  } catch (error) {
    if (!(error instanceof Missing)) throw error;
    console.error(`npm test cannot run: ${error.message}`);
    process.exit(1);
  }
}

await main();
