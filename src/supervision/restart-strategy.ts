import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";

/** Which children a crash restarts (Erlang/OTP semantics). */
export type RestartStrategy = "ONE_FOR_ONE" | "ONE_FOR_ALL" | "REST_FOR_ONE";

/** Every {@link RestartStrategy}. */
export const RESTART_STRATEGIES: readonly RestartStrategy[] = Object.freeze(["ONE_FOR_ONE", "ONE_FOR_ALL", "REST_FOR_ONE"]);

/**
 * The strategy supervisor `name` was given, `ONE_FOR_ONE` when it was given none.
 * @throws {@link InvalidArgumentError} for anything that is not a {@link RestartStrategy}
 */
export function resolveStrategy(name: string, strategy: RestartStrategy | undefined): RestartStrategy {
  // Only a missing strategy takes the default: an explicit null (a YAML key without a value) is refused.
  const resolved = strategy === undefined ? "ONE_FOR_ONE" : strategy;
  if (!RESTART_STRATEGIES.includes(resolved)) {
    throw new InvalidArgumentError("strategy", `supervisor '${name}': strategy must be one of ${RESTART_STRATEGIES.join(", ")}, got ${describeValue(resolved)}`);
  }
  return resolved;
}

/** The children `strategy` restarts when `child` crashes, in start order. */
export function restartSet<C>(strategy: RestartStrategy, children: readonly C[], child: C): readonly C[] {
  switch (strategy) {
    case "ONE_FOR_ONE":
      return [child];
    case "ONE_FOR_ALL":
      return children;
    case "REST_FOR_ONE":
      return children.slice(children.indexOf(child));
  }
}
