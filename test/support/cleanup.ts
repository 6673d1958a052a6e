import { afterEach } from "vitest";

/**
 * The steps a test pushes to undo what it set up (stop a runtime, close a
 * store …), run after each test in reverse order, last pushed first.
 * Registers `afterEach`: call it at the top level of a file.
 */
export function cleanupSteps(): (() => Promise<void>)[] {
  const steps: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of steps.splice(0).reverse()) await step();
  });
  return steps;
}
