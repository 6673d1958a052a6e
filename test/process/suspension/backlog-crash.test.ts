/**
 * The durable backlog under real crashes (issue 26, item 7): a child process
 * runs a Runtime on a SQLite file and is SIGKILLed — after a send to the
 * suspended agent resolved, while the restored backlog is replayed, while the
 * agent handles a replayed message — and another child restarts on the same
 * file. Every accepted message (its send resolved) is handled exactly once,
 * in the order accepted. The child (fixtures/backlog-crash-child.ts) writes
 * each line before the step it announces or after the step it acknowledges.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../../src/message/json.js";
import { mulberry32 } from "../../../src/testing/simulation/prng.js";
import { runTsChild } from "../../support/child-process.js";
import { scratch } from "../../support/scratch.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const childScript = path.join(here, "fixtures", "backlog-crash-child.ts");
const { tempDir } = scratch("civitas-backlog-crash-");

type Line = JsonObject & { ev: string };

interface Run {
  lines: Line[];
  killed: boolean;
}

/**
 * Runs the child; `killOn` decides, line by line, whether to SIGKILL it right
 * there. Resolves once it is gone; a child that was not killed must exit 0.
 */
async function child(args: string[], killOn: (line: Line) => boolean = () => false): Promise<Run> {
  const lines: Line[] = [];
  let killed = false;
  const run = await runTsChild(childScript, args, {
    timeoutMs: 20_000,
    onLine: (text, kill) => {
      const line = JSON.parse(text) as Line;
      lines.push(line);
      if (!killed && killOn(line)) {
        killed = true;
        kill();
      }
    },
  });
  if (killed) expect(run.signal).toBe("SIGKILL");
  else expect(run.code, run.stderr).toBe(0);
  return { lines, killed };
}

/** The messages whose send resolved in `run`, in order. */
function accepted(run: Run): string[] {
  return run.lines.filter((l) => l.ev === "sent").map((l) => l.n as string);
}

/** Restarts until the backlog is drained; returns what the agent handled, in order, over its whole life. */
async function drain(file: string): Promise<string[]> {
  const last = await child(["replay", file]);
  const drained = last.lines.find((l) => l.ev === "drained");
  expect(drained, JSON.stringify(last.lines)).toBeDefined();
  return drained?.handled as string[];
}

describe("durable backlog under SIGKILL", { timeout: 120_000 }, () => {
  it("a kill after send resolved: every accepted message is handled once, in order, after the restart", async () => {
    const file = path.join(tempDir(), "state.db");
    const sending = await child(["send", file, "--count=6", "--stop-after=m3"], (l) => l.ev === "sent" && l.n === "m3");
    expect(accepted(sending)).toEqual(["m0", "m1", "m2", "m3"]);
    const replay = await child(["replay", file, "--fresh=f"]);
    expect(replay.lines[0]).toMatchObject({ ev: "start", status: "SUSPENDED", backlog: 4 });
    // The restored backlog first, then what was sent after the restart.
    expect(replay.lines.find((l) => l.ev === "drained")?.handled).toEqual(["m0", "m1", "m2", "m3", "f"]);
  });

  it("a kill while the backlog is replayed (between messages, and right after a restart): nothing lost, nothing twice", async () => {
    const file = path.join(tempDir(), "state.db");
    const expected = accepted(await child(["send", file, "--count=8"]));
    expect(expected).toHaveLength(8);
    const first = await child(["replay", file, "--fresh=f1"], (l) => l.ev === "handled" && l.n === "m2");
    expect(first.killed).toBe(true);
    expected.push(...accepted(first));
    // Killed as soon as it is back (RUNNING: the first replay's resume was stored), while the rest of the backlog is handled.
    const second = await child(["replay", file, "--fresh=f2"], (l) => l.ev === "start");
    expect(second.lines.find((l) => l.ev === "start")).toMatchObject({ status: "RUNNING" });
    expect(accepted(second)).toEqual([]);
    expect(await drain(file)).toEqual(expected);
    expect(expected).toContain("f1");
  });

  it("a kill while the agent handles a replayed message (before its checkpoint): it is handled again, once", async () => {
    const file = path.join(tempDir(), "state.db");
    const expected = accepted(await child(["send", file, "--count=5"]));
    const held = await child(["replay", file, "--hold=m2"], (l) => l.ev === "handling" && l.n === "m2");
    expect(held.lines.filter((l) => l.ev === "handled").map((l) => l.n)).toEqual(["m0", "m1"]);
    expect(await drain(file)).toEqual(expected);
  });

  it("random kills over send and replay cycles on one file: every accepted message handled once, in order", async () => {
    const random = mulberry32(2026);
    const file = path.join(tempDir(), "state.db");
    const expected: string[] = [];
    // Send first (the agent must be paused for a replay to have something to do).
    let sent = 0;
    for (let cycle = 0; cycle < 5; cycle++) {
      if (cycle % 2 === 0) {
        const count = 1 + Math.floor(random() * 4);
        const prefix = `c${cycle}-`;
        const stopAt = Math.floor(random() * (count + 1)); // == count: no kill, the child ends
        const args = ["send", file, `--count=${count}`, `--prefix=${prefix}`, ...(stopAt < count ? [`--stop-after=${prefix}${stopAt}`] : [])];
        const run = await child(args, (l) => stopAt < count && l.ev === "sent" && l.n === `${prefix}${stopAt}`);
        expected.push(...accepted(run));
        sent += accepted(run).length;
      } else {
        // A replay killed at a random line (it may also drain and end before that line comes).
        let seen = 0;
        const killAt = Math.floor(random() * 6);
        const run = await child(["replay", file, `--fresh=r${cycle}`], () => seen++ === killAt);
        expected.push(...accepted(run));
        if (!run.killed) {
          // Drained and stopped, RUNNING: the next cycle's send suspends it again.
          expect(run.lines.find((l) => l.ev === "drained")?.handled).toEqual(expected);
        }
      }
    }
    expect(sent).toBeGreaterThan(0);
    // The last cycle was a send: the agent is paused with a backlog.
    expect(await drain(file)).toEqual(expected);
  });
});
