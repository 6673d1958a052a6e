/** Options of `send`, `sendCapable` and `broadcast`. */
export interface SendOptions {
  /** The message type. @defaultValue "message" */
  type?: string;
  /** Discard the message if it waits in the mailbox longer than this. */
  ttlMs?: number;
  /** Aborts a send that is waiting for room in a full mailbox. */
  signal?: AbortSignal;
}

/** Options of `ask`. */
export interface AskOptions extends SendOptions {
  /** How long to wait for the reply. @defaultValue 30000 */
  timeoutMs?: number;
  /**
   * Reject at once with `AGENT_SUSPENDED` when the recipient is SUSPENDED,
   * instead of waiting (until `timeoutMs`) for it to be resumed. @defaultValue false
   */
  failIfSuspended?: boolean;
}
