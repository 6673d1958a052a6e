import { CivitasError } from "./civitas-error.js";

/**
 * A message sent to a suspended agent could not be written to its durable
 * backlog (the store refused or failed the write), so the send was not
 * accepted: the message was taken back out of the mailbox and will not be
 * handled. The store's error is the `cause`. Retry the send once the store
 * is reachable again.
 */
export class BacklogWriteError extends CivitasError {
  /** The suspended agent the message was for. */
  readonly agent: string;
  /** The id of the message that was not accepted. */
  readonly messageId: string;
  constructor(agent: string, messageId: string, options?: ErrorOptions) {
    super(
      "BACKLOG_WRITE_FAILED",
      `'${agent}' is suspended and message ${messageId} could not be written to its durable backlog, so it was not accepted (the store's error is the cause); send it again once the store is reachable, or set durableBacklog: false to queue in memory only`,
      options,
    );
    this.agent = agent;
    this.messageId = messageId;
  }
}

/**
 * An agent's `state` set a key the runtime owns and writes itself
 * (`_civitas.backlog`, the durable backlog of a suspended agent); nothing
 * was written. Rename the field.
 */
export class ReservedStateKeyError extends CivitasError {
  /** The agent whose state was refused. */
  readonly agent: string;
  /** The reserved key it set. */
  readonly key: string;
  constructor(agent: string, key: string) {
    super("RESERVED_STATE_KEY", `state of '${agent}' sets '${key}', a key the runtime owns (the durable backlog of a suspended agent); nothing was written — rename that field of your state`);
    this.agent = agent;
    this.key = key;
  }
}
