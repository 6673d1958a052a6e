import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { BACKOFF_POLICIES, type BackoffPolicy } from "./backoff.js";

/** Restart settings shared by `Supervisor` and `DynamicSupervisor`. */
export interface RestartOptions {
  /** Restarts allowed within `restartWindowMs` before the supervisor gives up. @defaultValue 3 */
  maxRestarts?: number;
  /** The sliding window restarts are counted in. @defaultValue 60000 */
  restartWindowMs?: number;
  /** How the delay before a restart grows. @defaultValue "CONSTANT" */
  backoff?: BackoffPolicy;
  /** The base delay before a restart. @defaultValue 1000 */
  backoffBaseMs?: number;
  /** The longest delay before a restart. @defaultValue 60000 */
  backoffMaxMs?: number;
}

/** {@link RestartOptions} with every default applied and checked. @internal */
export type ResolvedRestartOptions = Required<RestartOptions>;

/**
 * Applies defaults and validates restart settings. Only a setting that is
 * absent (`undefined`) takes its default; `null` (a YAML key without a value)
 * is refused like any other bad value.
 * @throws {@link InvalidArgumentError} naming the refused setting
 * @internal
 */
export function resolveRestartOptions(owner: string, options: RestartOptions): ResolvedRestartOptions {
  const backoff = orDefault(options.backoff, "CONSTANT");
  if (!BACKOFF_POLICIES.includes(backoff)) {
    throw new InvalidArgumentError("backoff", `supervisor '${owner}': backoff must be one of ${BACKOFF_POLICIES.join(", ")}, got ${describeValue(backoff)}`);
  }
  return {
    maxRestarts: integerAtLeast(owner, "maxRestarts", orDefault(options.maxRestarts, 3), 0),
    restartWindowMs: integerAtLeast(owner, "restartWindowMs", orDefault(options.restartWindowMs, 60_000), 1),
    backoff,
    backoffBaseMs: integerAtLeast(owner, "backoffBaseMs", orDefault(options.backoffBaseMs, 1000), 0),
    backoffMaxMs: integerAtLeast(owner, "backoffMaxMs", orDefault(options.backoffMaxMs, 60_000), 0),
  };
}

/** `value` unless it is absent; unlike `??`, keeps `null` so validation sees it. */
function orDefault<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

function integerAtLeast(owner: string, name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new InvalidArgumentError(name, `supervisor '${owner}': ${name} must be an integer >= ${min}, got ${describeValue(value)}`);
  }
  return value;
}
