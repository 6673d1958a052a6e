// The child side of the crash tests' processes (the parent side is
// child-process.ts): one JSON line per step on stdout, a failure on stderr
// with exit code 2, and a watchdog so that a stuck child never hangs a test.
import type { JsonObject } from "../../src/message/json.js";

/** Prints `line` as one JSON line on stdout (the test reads them). */
export function emit(line: JsonObject): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Writes `why` on stderr and exits with code 2. */
export function fail(why: string): never {
  process.stderr.write(`${why}\n`);
  process.exit(2);
}

/** Fails the child (exit 2) when `mode` is still running after 20 s. */
export function armWatchdog(mode: string): void {
  setTimeout(() => fail(`watchdog: '${mode}' still running after 20 s`), 20_000).unref();
}
