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

/**
 * {@link LEGAL_TRANSITIONS}' lists copied once into arrays of this module's
 * own, which nothing else can reach: V8 reads an unfrozen array inline, a
 * frozen one through a call per element (and for-of over it is a call per step).
 */
const ALLOWED = {
  INITIALIZING: [...LEGAL_TRANSITIONS.INITIALIZING],
  RUNNING: [...LEGAL_TRANSITIONS.RUNNING],
  SUSPENDED: [...LEGAL_TRANSITIONS.SUSPENDED],
  STOPPING: [...LEGAL_TRANSITIONS.STOPPING],
  STOPPED: [...LEGAL_TRANSITIONS.STOPPED],
  CRASHED: [...LEGAL_TRANSITIONS.CRASHED],
};

/** Whether `from → to` is a legal status change; `false` when `from` is not a status at all. */
export function isLegalTransition(from: ProcessStatus, to: ProcessStatus): boolean {
  const allowed = transitionsFrom(from);
  if (allowed === undefined) return false;
  // An indexed loop V8 inlines (includes() is a builtin call); every suspend and resume makes two checks.
  for (let i = 0; i < allowed.length; i++) if (allowed[i] === to) return true;
  return false;
}

/**
 * The changes legal from `from` ({@link ALLOWED}), read by name: a read
 * keyed by the status is a generic lookup once V8 has seen a few statuses at the site.
 */
function transitionsFrom(from: ProcessStatus): readonly ProcessStatus[] | undefined {
  switch (from) {
    case ProcessStatus.INITIALIZING:
      return ALLOWED.INITIALIZING;
    case ProcessStatus.RUNNING:
      return ALLOWED.RUNNING;
    case ProcessStatus.SUSPENDED:
      return ALLOWED.SUSPENDED;
    case ProcessStatus.STOPPING:
      return ALLOWED.STOPPING;
    case ProcessStatus.STOPPED:
      return ALLOWED.STOPPED;
    case ProcessStatus.CRASHED:
      return ALLOWED.CRASHED;
    default:
      return undefined;
  }
}
