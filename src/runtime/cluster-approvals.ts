import type { ApprovalRecord } from "../approvals/approval-request.js";
import type { ApprovalListFilter, ApprovalStatus } from "../approvals/approval-types.js";
import { readStoredApprovals } from "../approvals/stored-approvals.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import type { JsonObject } from "../message/json.js";
import type { StateStore } from "../state/state-store.js";

/**
 * The approval requests the runtime's state store records, wherever their
 * agents run: what `runtime.approvals.list({ scope: "cluster" })` shows of
 * the agents it does not host, and where a vote for a request of another
 * process finds the agent that holds it.
 * @module
 */

/** What the store's query may narrow the rows by (a pre-filter on the stored text; each record is checked after). */
interface ApprovalStateQuery {
  status?: ApprovalStatus;
  approvalId?: string;
}

/** A store that lists the states holding approval requests in one query: what `PostgresStateStore.listApprovalStates()` is. */
interface ApprovalStateIndex {
  listApprovalStates(options?: ApprovalStateQuery): Promise<readonly { readonly name: string; readonly state: JsonObject }[]>;
}

function isApprovalStateIndex(store: StateStore): store is StateStore & ApprovalStateIndex {
  return typeof (store as Partial<ApprovalStateIndex>).listApprovalStates === "function";
}

/** The stored states to read: from the store's index when it has one, else every record (or the one of `agent`). */
async function storedStates(store: StateStore, agent: string | undefined, query: ApprovalStateQuery): Promise<{ name: string; state: JsonObject }[]> {
  if (agent === undefined && isApprovalStateIndex(store)) return [...(await store.listApprovalStates(query))];
  const found: { name: string; state: JsonObject }[] = [];
  for (const name of agent === undefined ? await store.list() : [agent]) {
    const state = await store.get(name);
    if (state !== undefined) found.push({ name, state });
  }
  return found;
}

/**
 * The stored records matching `filter` of every agent in the store this
 * runtime does not host (its own are shown from memory). A state whose
 * requests cannot be read is left out, with a warning.
 * @throws (rejects) with the store's error (`STORE_UNAVAILABLE` …)
 * @internal
 */
export async function storedApprovals(services: RuntimeServices, filter: ApprovalListFilter, approvalId?: string): Promise<ApprovalRecord[]> {
  const { store, registry, logger } = services;
  const query: ApprovalStateQuery = {};
  if (filter.status !== undefined) query.status = filter.status;
  if (approvalId !== undefined) query.approvalId = approvalId;
  const records: ApprovalRecord[] = [];
  for (const { name, state } of await storedStates(store, filter.agent, query)) {
    if (registry.get(name) !== undefined) continue;
    try {
      for (const record of readStoredApprovals(name, state)) {
        if ((filter.status === undefined || record.status === filter.status) && (approvalId === undefined || record.approvalId === approvalId)) records.push(record);
      }
    } catch (error) {
      logger.warn(`approvals: the stored approval requests of '${name}' cannot be read; they are left out`, { error });
    }
  }
  return records;
}

/**
 * The stored record of `approvalId` (exactly) held by an agent this runtime
 * does not host, or `undefined`. The store says which agent holds it (each
 * record is checked to name the agent whose state holds it); the caller
 * names nothing but the id, and the owner checks again that it holds it.
 * @internal
 */
export async function findStoredApproval(services: RuntimeServices, approvalId: string): Promise<ApprovalRecord | undefined> {
  return (await storedApprovals(services, {}, approvalId))[0];
}
