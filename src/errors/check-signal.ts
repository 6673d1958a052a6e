import { describeValue } from "./civitas-error.js";
import { InvalidArgumentError } from "./errors.js";

/**
 * Refuses, with `INVALID_ARGUMENT`, a `signal` option that is neither left
 * out nor an `AbortSignal` (anything with a boolean `aborted` and
 * `addEventListener`), before the call it came with changes anything.
 * @internal
 */
export function checkSignal(signal: unknown, where: string): asserts signal is AbortSignal | undefined {
  if (signal === undefined) return;
  const usable =
    typeof signal === "object" &&
    signal !== null &&
    "aborted" in signal &&
    typeof signal.aborted === "boolean" &&
    "addEventListener" in signal &&
    typeof signal.addEventListener === "function";
  if (!usable) {
    throw new InvalidArgumentError("signal", `${where}: option signal must be an AbortSignal (from an AbortController, or AbortSignal.timeout(ms)) or left out, got ${describeValue(signal)}`);
  }
}
