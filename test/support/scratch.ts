/**
 * Scratch resources a test makes and the `afterEach` that disposes of them:
 * temporary directories, and handles (stores, databases) to close.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";

/** What {@link scratch} returns. */
export interface Scratch {
  /** A fresh temporary directory, removed after the test. */
  readonly tempDir: () => string;
  /** Closes `handle` after the test (handles in the reverse order of tracking, before the directories go); returns it. */
  readonly track: <T extends { close(): unknown }>(handle: T) => T;
}

/**
 * Registers (with vitest's `afterEach`, so call it at the top level of a test
 * file) the clean-up of every directory and handle a test makes through the
 * returned functions. vitest runs `afterEach` hooks in the reverse order of
 * registration: call it before `runtimes()` so that the runtimes are stopped
 * before their stores are closed.
 */
export function scratch(prefix = "civitas-test-"): Scratch {
  const dirs: string[] = [];
  const closers: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c.close();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    tempDir: () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    track: (handle) => {
      closers.push(handle);
      return handle;
    },
  };
}
