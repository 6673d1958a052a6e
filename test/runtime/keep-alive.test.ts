import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("./fixtures/keep-alive.ts", import.meta.url));

function run(...args: string[]): { status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, ["--import", "tsx", script, ...args], { encoding: "utf8", timeout: 15_000 });
  return { status: result.status, stdout: result.stdout };
}

describe("Runtime keepAlive", () => {
  it("keeps the process alive between start() and stop(), so timer-driven work completes", () => {
    expect(run()).toEqual({ status: 0, stdout: "ASK_TIMEOUT\nstopped\n" });
  });

  it("with keepAlive: false the process may exit while only runtime timers are pending", () => {
    const result = run("no-keep-alive");
    expect(result.stdout).toBe("");
    expect(result.status).toBe(13); // Node: unsettled top-level await
  });
});
