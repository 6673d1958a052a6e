/**
 * The model-based run the `*.model.test.ts` files share: random command
 * sequences (fast-check `fc.commands`), each run against a fresh model and a
 * fresh real system, checked after the commands, and cleaned up whatever happened.
 */
import fc from "fast-check";

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

/** Runs `run.numRuns` random command sequences against the model and the real system (`fc.assert` of `fc.asyncModelRun`). */
export async function checkAgainstModel<Model extends object, Real>(run: ModelRun<Model, Real>): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.commands(run.commands, { maxCommands: run.maxCommands, size: "max" }), async (cmds) => {
      const { model, real } = await run.setup();
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await run.check?.(model, real);
      } finally {
        await run.cleanUp(real);
      }
    }),
    { numRuns: run.numRuns },
  );
}
