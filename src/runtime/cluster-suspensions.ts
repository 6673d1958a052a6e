import { ClusterScopeUnsupportedError } from "../errors/errors.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import type { StateStore } from "../state/state-store.js";
import type { SuspendedAgent } from "./runtime-control.js";

/** A store that lists every suspension it holds, wherever its agent runs: what `PostgresStateStore.listSuspended()` is. */
interface SuspensionIndex {
  listSuspended(): Promise<readonly { readonly name: string; readonly marker: SuspensionMarker }[]>;
}

function isSuspensionIndex(store: StateStore): store is StateStore & SuspensionIndex {
  return typeof (store as Partial<SuspensionIndex>).listSuspended === "function";
}

/**
 * The entry of `marker` for the agent `name`, as `listSuspended` reports it.
 * @internal
 */
export function suspendedAgent(name: string, marker: SuspensionMarker): SuspendedAgent {
  return {
    name,
    reason: marker.reason,
    since: marker.since,
    suspensionId: marker.suspensionId,
    ...(marker.expiresAt === undefined ? {} : { expiresAt: marker.expiresAt }),
  };
}

/**
 * Every suspension `store` records, sorted by name. Rejects with
 * `CLUSTER_SCOPE_UNSUPPORTED` (before any query) when the store cannot list
 * them; with the store's own error (`STORE_UNAVAILABLE` …) when the query fails.
 * @internal
 */
export async function listClusterSuspended(store: StateStore): Promise<SuspendedAgent[]> {
  if (!isSuspensionIndex(store)) throw new ClusterScopeUnsupportedError((store as object).constructor?.name ?? typeof store);
  const rows = await store.listSuspended();
  return rows.map((row) => suspendedAgent(row.name, row.marker));
}
