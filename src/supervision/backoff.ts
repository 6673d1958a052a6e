/** How the delay before a restart grows with the number of recent restarts. */
export type BackoffPolicy = "CONSTANT" | "LINEAR" | "EXPONENTIAL";

/** Every {@link BackoffPolicy}. */
export const BACKOFF_POLICIES: readonly BackoffPolicy[] = Object.freeze(["CONSTANT", "LINEAR", "EXPONENTIAL"]);

/**
 * The delay before restart number `restart` (1-based, counted within the
 * restart window): CONSTANT `base`, LINEAR `base × n`, EXPONENTIAL
 * `base × 2^(n-1)`, never more than `maxMs`.
 */
export function backoffDelay(policy: BackoffPolicy, restart: number, baseMs: number, maxMs: number): number {
  const n = Math.max(1, restart);
  const delay = policy === "CONSTANT" ? baseMs : policy === "LINEAR" ? baseMs * n : baseMs * 2 ** (n - 1);
  return Math.min(delay, maxMs);
}
