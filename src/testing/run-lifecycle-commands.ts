import { LifecycleDriver } from "./lifecycle-driver.js";
import type { LifecycleCommand } from "./lifecycle-command.js";
import type { LifecycleDriverOptions, LifecycleObservation } from "./lifecycle-observation.js";

/**
 * Runs `commands` (from {@link lifecycleCommandsArbitrary}, or written by
 * hand) against a real runtime and returns what happened. Compare
 * `observation.outcome` with `SuspensionModel.run(commands)`.
 *
 * @throws (rejects) {@link WaitTimeoutError} (`WAIT_TIMEOUT`) when a command does not settle in time
 * @example
 * ```ts
 * const commands: LifecycleCommand[] = [{ kind: "suspend", reason: "review" }, { kind: "send", id: 0 }, { kind: "resume", approver: "valid" }];
 * const observed = await runLifecycleCommands(commands, { createAgent: (name) => new Payer(name) });
 * expect(observed.outcome).toEqual(SuspensionModel.run(commands));
 * ```
 */
export async function runLifecycleCommands(commands: readonly LifecycleCommand[], options: LifecycleDriverOptions = {}): Promise<LifecycleObservation> {
  const driver = new LifecycleDriver(options);
  try {
    await driver.start();
    for (const command of commands) await driver.apply(command);
  } catch (error) {
    await driver.dispose();
    throw error;
  }
  return driver.finish();
}
