import type { RestartStrategy } from "../../src/index.js";

/** The model of OTP's restart strategies: which children a crash of child `crashed` of `n` restarts. */
export function restartSet(strategy: RestartStrategy, n: number, crashed: number): number[] {
  switch (strategy) {
    case "ONE_FOR_ONE":
      return [crashed];
    case "ONE_FOR_ALL":
      return Array.from({ length: n }, (_, i) => i);
    case "REST_FOR_ONE":
      return Array.from({ length: n - crashed }, (_, i) => crashed + i);
  }
}
