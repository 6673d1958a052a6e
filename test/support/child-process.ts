import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** How a child process run by {@link runTsChild} ended. */
export interface ChildRun {
  /** Complete stdout lines, in order. */
  readonly lines: string[];
  /** A final stdout fragment without its newline (a line cut by a kill), or "". */
  readonly torn: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/**
 * Runs a TypeScript script with tsx in a child process, calling `onLine` for
 * each complete stdout line with a `kill` that SIGKILLs the child. Rejects
 * when the child has not ended within `timeoutMs` (it is killed then), or
 * when `onLine` throws (the child is killed, the error kept).
 */
export function runTsChild(
  script: string,
  args: readonly string[],
  options: { timeoutMs: number; onLine?: (line: string, kill: () => void) => void },
): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    const lines: string[] = [];
    let pending = "";
    let stderr = "";
    const kill = (): void => void child.kill("SIGKILL");
    const guard = setTimeout(() => {
      kill();
      reject(new Error(`${path.basename(script)} ${args.join(" ")} did not end within ${options.timeoutMs} ms; stdout:\n${lines.join("\n")}\nstderr:\n${stderr}`));
    }, options.timeoutMs);
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      const complete = pending.split("\n");
      pending = complete.pop() ?? "";
      for (const line of complete) {
        lines.push(line);
        try {
          options.onLine?.(line, kill);
        } catch (error) {
          kill();
          clearTimeout(guard);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      resolve({ lines, torn: pending, code, signal, stderr });
    });
  });
}

/** How a program run by {@link runProgram} ended, with all it printed. */
export interface ProgramRun {
  readonly code: number | null;
  /** `"SIGKILL"` when it was killed for running past its time, else how a signal ended it, or `null`. */
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a TypeScript program the way a user would (`node --import tsx
 * <script>` from the repository root, `script` relative to it), collecting
 * its output. A program still running after `timeoutMs` is SIGKILLed; the
 * promise then still resolves (`signal: "SIGKILL"`). Rejects only when the
 * process could not be spawned.
 */
export function runProgram(script: string, options: { timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<ProgramRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const guard = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(guard);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
