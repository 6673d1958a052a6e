/** What an agent's `onError` decides to do about a failed message. */
export enum ErrorAction {
  /** Re-enqueue the message with `attempt + 1`; past `maxRetries` the agent crashes. */
  RETRY = "RETRY",
  /** Drop the message and carry on. */
  SKIP = "SKIP",
  /** Stop the agent cleanly (a normal exit; supervisors do not restart it). */
  STOP = "STOP",
  /** Crash the agent and let its supervisor decide. The default. */
  ESCALATE = "ESCALATE",
}
