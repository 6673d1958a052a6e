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

  it("with keepAlive: false a pending ask's timeout still fires: the caller sees ASK_TIMEOUT, never an unsettled promise (exit code 13)", () => {
    expect(run("no-keep-alive")).toEqual({ status: 0, stdout: "ASK_TIMEOUT\nstopped\n" });
  });

  it("with keepAlive: false an answered ask holds the process no longer: it ends without stop() long before the ask's 60 s timeout", () => {
    // spawnSync's 15 s timeout would kill a process held by the answered ask's timer (status null).
    expect(run("answered-no-stop")).toEqual({ status: 0, stdout: 'answered {"n":1}\n' });
  });
});
