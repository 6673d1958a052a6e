import type { StateStore } from "../state/state-store.js";
import { readAnchor } from "./audit-anchor.js";
import type { AuditRow } from "./audit-row.js";

/** A disagreement between a log and the anchor its agent's stored state records. @internal */
export interface AnchorFailure {
  readonly reason: "truncated" | "anchor-mismatch";
  readonly failure: string;
}

/**
 * Compares the verified rows of a log with the audit anchor stored beside
 * `agent`'s state: the log must hold the anchored row, with the anchored
 * hash. `undefined` when they agree or the store holds no anchor.
 * @throws (rejects) what `store.get` rejects with (`STATE_SCHEMA`, `STORE_UNAVAILABLE` …).
 * @internal
 */
export async function crossCheckAnchor(rows: readonly AuditRow[], agent: string, store: Pick<StateStore, "get">): Promise<AnchorFailure | undefined> {
  const anchor = readAnchor(await store.get(agent));
  if (anchor === undefined) return undefined;
  const row = rows[anchor.seq];
  if (row === undefined) {
    return {
      reason: "truncated",
      failure: `truncated: the state store records that '${agent}' was receipted at row ${anchor.seq}, but the log's verified rows end at row ${rows.length - 1}; rows were cut off its end`,
    };
  }
  if (row.hash !== anchor.hash) {
    return {
      reason: "anchor-mismatch",
      failure: `anchor-mismatch: the state store records row ${anchor.seq} of '${agent}' with hash ${anchor.hash.slice(0, 12)}…, but the log's row ${anchor.seq} has ${row.hash.slice(0, 12)}…; the log was replaced or rewritten from there`,
    };
  }
  return undefined;
}
