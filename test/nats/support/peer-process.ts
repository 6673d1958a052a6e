import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { peerPython } from "../../support/test-python.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** A child process that prints one JSON object per stdout line. */
export interface PeerProcess {
  readonly pid: number;
  /** Every JSON line printed so far. */
  readonly events: Record<string, unknown>[];
  /** Resolves with the first event (already printed or to come) that `match` accepts; rejects after `timeoutMs`. */
  waitFor(match: (event: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then resolves with the exit code once it ended (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
  /** What it wrote to stderr. */
  stderr(): string;
}

/**
 * Starts `command args` (a TypeScript file runs with tsx, a Python file with
 * the test environment's Python, see test/support/test-python.ts) in the repository root and resolves once it printed an event
 * `{ event: "ready" }`; rejects if it ends or stays silent for `timeoutMs` first.
 */
export async function startPeer(script: string, args: readonly string[], timeoutMs = 20_000): Promise<PeerProcess> {
  const python = script.endsWith(".py");
  const child: ChildProcess = python
    ? spawn(peerPython(), ["-u", script, ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
  const events: Record<string, unknown>[] = [];
  const listeners = new Set<() => void>();
  let stderr = "";
  let pending = "";
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => {
    exitCode = code;
    resolve(code);
    for (const listener of listeners) listener();
  }));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim().length === 0) continue;
      try {
        events.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        events.push({ event: "text", line });
      }
    }
    for (const listener of listeners) listener();
  });
  const peer: PeerProcess = {
    pid: child.pid ?? -1,
    events,
    stderr: () => stderr,
    waitFor(match, waitMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = events.find(match);
          if (found !== undefined) {
            done();
            resolve(found);
          } else if (exitCode !== undefined) {
            done();
            reject(new Error(`${path.basename(script)} ended (code ${String(exitCode)}) before the awaited event; events: ${JSON.stringify(events)}\nstderr:\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${path.basename(script)}: the awaited event did not come within ${waitMs} ms; events: ${JSON.stringify(events)}\nstderr:\n${stderr}`));
        }, waitMs);
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (exitCode !== undefined) return exitCode;
      child.kill("SIGTERM");
      const guard = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(guard);
      return code;
    },
  };
  try {
    await peer.waitFor((event) => event.event === "ready", timeoutMs);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return peer;
}
