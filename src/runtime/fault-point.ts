import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";

const PASSED: Promise<void> = Promise.resolve();

/**
 * Where a simulation (`simulate()` of `civitas-ts/testing`) takes over
 * {@link faultPoint}: process-wide, as the simulation is. Without a
 * simulation it is `undefined` and a fault point costs a check.
 * @internal
 */
export const faultPoints: { hook: ((name: string) => Promise<void> | undefined) | undefined } = { hook: undefined };

/**
 * Marks a place in an agent's own code where things may go wrong, as
 * FoundationDB's BUGGIFY does: between a debit and a credit, between two
 * sends. Outside a simulation it does nothing (the promise is already
 * resolved). Under `simulate()` with `faults.points` (or a targeted fault
 * naming the point), it is a step the simulator chooses like any other,
 * where it may crash the agent (the promise rejects with `SIMULATED_CRASH`;
 * let it propagate), throw an error the handler may handle
 * (`SIMULATED_FAULT`), or delay the agent in virtual time.
 * @param name - names the point in the trace (`point:<agent>:<name>#<n>`) and in targeted faults
 * @returns a promise that rejects with {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `name` is not a non-empty string
 * @example
 * ```ts
 * await this.ask("alice", { amount }, { type: "withdraw" });
 * await faultPoint("between-debit-and-credit");
 * await this.ask("bob", { amount }, { type: "deposit" });
 * ```
 */
export function faultPoint(name: string): Promise<void> {
  if (typeof name !== "string" || name.length === 0) return Promise.reject(new InvalidArgumentError("name", `faultPoint(name): name must be a non-empty string naming the point, got ${describeValue(name)}`));
  const hook = faultPoints.hook;
  return hook === undefined ? PASSED : (hook(name) ?? PASSED);
}
