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
 * (INITIALIZING → CRASHED: `onStart` threw or the stored state was refused)
 * and a supervisor's restart, which begins a new incarnation
 * (STOPPED | CRASHED → INITIALIZING). Anything else throws
 * `ILLEGAL_TRANSITION`.
 */
export const LEGAL_TRANSITIONS: Readonly<Record<ProcessStatus, readonly ProcessStatus[]>> = Object.freeze({
  [ProcessStatus.INITIALIZING]: [ProcessStatus.RUNNING, ProcessStatus.SUSPENDED, ProcessStatus.CRASHED],
  [ProcessStatus.RUNNING]: [ProcessStatus.SUSPENDED, ProcessStatus.STOPPING, ProcessStatus.CRASHED],
  [ProcessStatus.SUSPENDED]: [ProcessStatus.RUNNING, ProcessStatus.STOPPING],
  [ProcessStatus.STOPPING]: [ProcessStatus.STOPPED],
  [ProcessStatus.STOPPED]: [ProcessStatus.INITIALIZING],
  [ProcessStatus.CRASHED]: [ProcessStatus.INITIALIZING],
});

/** Whether `from → to` is a legal status change. */
export function isLegalTransition(from: ProcessStatus, to: ProcessStatus): boolean {
  return LEGAL_TRANSITIONS[from].includes(to);
}
