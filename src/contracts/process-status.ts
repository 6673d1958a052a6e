/**
 * The lifecycle status of an agent. Values equal their names, so they read
 * well in logs and JSON.
 */
export enum ProcessStatus {
  INITIALIZING = "INITIALIZING",
  RUNNING = "RUNNING",
  SUSPENDED = "SUSPENDED",
  STOPPING = "STOPPING",
  STOPPED = "STOPPED",
  CRASHED = "CRASHED",
}

/**
 * Every legal status change. SPEC §4's table, plus the two edges a lifecycle
 * needs that the table leaves implicit: a start that fails
 * (INITIALIZING → CRASHED: `onStart` threw, or ran past `shutdownTimeoutMs`
 * once a stop came, or the stored state was refused)
 * and a supervisor's restart, which begins a new incarnation
 * (STOPPED | CRASHED → INITIALIZING). Anything else throws
 * `ILLEGAL_TRANSITION`.
 */
export const LEGAL_TRANSITIONS: Readonly<Record<ProcessStatus, readonly ProcessStatus[]>> = Object.freeze({
  [ProcessStatus.INITIALIZING]: Object.freeze([ProcessStatus.RUNNING, ProcessStatus.SUSPENDED, ProcessStatus.CRASHED]),
  [ProcessStatus.RUNNING]: Object.freeze([ProcessStatus.SUSPENDED, ProcessStatus.STOPPING, ProcessStatus.CRASHED]),
  [ProcessStatus.SUSPENDED]: Object.freeze([ProcessStatus.RUNNING, ProcessStatus.STOPPING]),
  [ProcessStatus.STOPPING]: Object.freeze([ProcessStatus.STOPPED]),
  [ProcessStatus.STOPPED]: Object.freeze([ProcessStatus.INITIALIZING]),
  [ProcessStatus.CRASHED]: Object.freeze([ProcessStatus.INITIALIZING]),
});

/** Whether `from → to` is a legal status change; `false` when `from` is not a status at all. */
export function isLegalTransition(from: ProcessStatus, to: ProcessStatus): boolean {
  const allowed: unknown = LEGAL_TRANSITIONS[from];
  if (!Array.isArray(allowed)) return false;
  // A loop V8 inlines: includes() is a builtin call, and every suspend and resume makes two checks.
  for (const status of allowed as readonly ProcessStatus[]) if (status === to) return true;
  return false;
}
