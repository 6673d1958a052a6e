import type { JsonObject } from "../message/json.js";
import { queuedBusiness, restoreToFront } from "../mailbox/mailbox-internals.js";
import { BACKLOG_KEY, NO_MESSAGES, readStoredBacklog } from "./durable-backlog.js";
import type { ProcessRunner } from "./process-runner.js";

/**
 * At start, after the state is restored: the stored durable backlog goes
 * back into the mailbox, oldest first, before anything queued meanwhile
 * (see {@link DurableBacklog.restore}), and the key is taken out of `state`.
 * An agent without a durable backlog (`durableBacklog: false`) that finds
 * one stored (written before the option was turned off) still gets its
 * messages, once, with a warning: they are no longer stored.
 * @throws {@link StateSchemaError} for a malformed stored backlog
 * @internal
 */
export function restoreBacklog(r: ProcessRunner, stored: JsonObject | undefined): void {
  if (r.backlog !== undefined) {
    r.backlog.restore(stored);
    return;
  }
  // (`stored` may be `state` itself: read before the key is taken out.)
  const messages = stored === undefined ? NO_MESSAGES : readStoredBacklog(r.agent.name, stored);
  const state = r.agent.state;
  if (BACKLOG_KEY in state) delete state[BACKLOG_KEY];
  if (messages.length === 0 || r.starts > 1 || r.box === undefined) return;
  const queued = new Set(queuedBusiness(r.box).map((m) => m.id));
  restoreToFront(r.box, messages.filter((m) => !queued.has(m.id)));
  r.requireServices().logger.warn(
    `'${r.agent.name}' has durableBacklog off but its stored state holds ${messages.length} backlog message(s) written before; they are queued now, and no longer stored (the next write drops them)`,
  );
}
