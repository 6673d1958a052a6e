// A stopped runtime is released at once: nothing (an answered ask's timeout
// timer, say) keeps it reachable (issue 11, section 5).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("./fixtures/start-stop-cycles.ts", import.meta.url));

describe("a stopped runtime", () => {
  it("is released at once: after 10,000 start/ask/stop cycles the heap is back within 5 MB of where it started", () => {
    const result = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", script, "10000"], { encoding: "utf8", timeout: 120_000 });
    expect(result.status, result.stderr).toBe(0);
    const { cycles, growth } = JSON.parse(result.stdout) as { cycles: number; growth: number };
    expect(cycles).toBe(10_000);
    expect(growth).toBeLessThan(5 * 1024 * 1024);
  }, 130_000);
});
