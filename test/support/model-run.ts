/**
 * The model-based run the `*.model.test.ts` files share: random command
 * sequences (fast-check `fc.commands`), each run against a fresh model and a
 * fresh real system, checked after the commands, and cleaned up whatever happened.
 */
import fc from "fast-check";
import { expect } from "vitest";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { turns, waitUntil } from "./agents.js";
import type { Tracked } from "./outcome.js";

/** What {@link checkAgainstModel} runs. */
export interface ModelRun<Model extends object, Real> {
  /** The commands to draw sequences from. */
  readonly commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[];
  /** The longest sequence drawn. */
  readonly maxCommands: number;
  /** How many sequences are run. */
  readonly numRuns: number;
  /** A fresh model and real system for one sequence. */
  readonly setup: () => Promise<{ model: Model; real: Real }>;
  /** Checked after a sequence ran to its end (not after a failed one). */
  readonly check?: (model: Model, real: Real) => Promise<void>;
  /** Run after every sequence, failed or not. */
  readonly cleanUp: (real: Real) => Promise<void>;
}

/**
 * Runs `run.numRuns` random command sequences against the model and the real
 * system (`fc.assert` of `fc.asyncModelRun`). A failure reported elsewhere (CI)
 * replays with the three values fast-check printed:
 * `FC_SEED=<seed> FC_PATH=<path> FC_REPLAY=<replayPath> npx vitest run <file> -t <name>`.
 */
export async function checkAgainstModel<Model extends object, Real>(run: ModelRun<Model, Real>): Promise<void> {
  const replay = replayOf(process.env);
  const commands = fc.commands(run.commands, { maxCommands: run.maxCommands, size: "max", ...(replay && { replayPath: replay.replayPath }) });
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      const { model, real } = await run.setup();
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await run.check?.(model, real);
      } finally {
        await run.cleanUp(real);
      }
    }),
    replay ? { numRuns: run.numRuns, seed: replay.seed, path: replay.path, endOnFailure: true } : { numRuns: run.numRuns },
  );
}

/** The failure to replay that the environment names (all three of FC_SEED, FC_PATH, FC_REPLAY), if any. */
function replayOf(env: NodeJS.ProcessEnv): { seed: number; path: string; replayPath: string } | undefined {
  const { FC_SEED: seed, FC_PATH: path, FC_REPLAY: replayPath } = env;
  if (seed === undefined || path === undefined || replayPath === undefined) return undefined;
  return { seed: Number(seed), path, replayPath };
}

/** What the models say of an operation they track: "pending", "ok", or the code it was rejected with. */
export function outcomeOf(t: Tracked<unknown>): string {
  if (t.state === "pending") return "pending";
  if (t.state === "resolved") return "ok";
  return t.reason instanceof CivitasError ? t.reason.code : String(t.reason);
}

/** A list of differences between the real system and the model, and the function that adds one when `got` and `want` differ (compared as JSON). */
export function differences(): { readonly out: string[]; readonly same: (what: string, got: unknown, want: unknown) => void } {
  const out: string[] = [];
  const same = (what: string, got: unknown, want: unknown): void => {
    if (JSON.stringify(got) !== JSON.stringify(want)) out.push(`${what}: got ${JSON.stringify(got)}, model ${JSON.stringify(want)}`);
  };
  return { out, same };
}

/**
 * Waits (a bounded number of event-loop turns) until `mismatches()` is empty,
 * that is until the runtime matches the model, lets it run on `extraTurns`
 * turns, and expects it still does.
 */
export async function settleAndCompare(mismatches: () => string[], extraTurns = 6): Promise<void> {
  try {
    await waitUntil(() => mismatches().length === 0, "the runtime to match the model", 2000);
  } catch {
    // reported below
  }
  await turns(extraTurns);
  expect(mismatches()).toEqual([]);
}
