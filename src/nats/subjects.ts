import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";

/** Every address lives under this prefix, as in Python Civitas: an agent's mailbox is `civitas.agent.<name>`. */
const PREFIX = "civitas.agent.";

/** Where announcements go: `_agency.register` and `_agency.deregister` are addresses too, as in Python Civitas. @internal */
export const REGISTER_SUBJECT = `${PREFIX}_agency.register`;
/** @internal */
export const DEREGISTER_SUBJECT = `${PREFIX}_agency.deregister`;
/**
 * Where a starting civitas-ts runtime asks the others for their agents
 * (a request; each runtime answers with its list). Python Civitas does not
 * use it: it learns a late starter's agents from their re-announcement.
 * @internal
 */
export const ANNOUNCE_SUBJECT = "civitas.ts.announce";

/** The reply-address prefix of Python Civitas: a reply to `_reply.<uuid7>` is published to `civitas.agent._reply.<uuid7>`. @internal */
export const REPLY_PREFIX = "_reply.";

/** The subject of the address `name` (an agent's name, or a `_reply.<id>` address). @internal */
export function subjectOf(name: string): string {
  return PREFIX + name;
}

/**
 * Throws `INVALID_ARGUMENT` unless `name` makes a literal subject: tokens
 * between dots non-empty and not the `>` wildcard (agent names already
 * exclude whitespace and `*`).
 * @internal
 */
export function assertSubjectName(name: string): void {
  if (name.split(".").some((token) => token.length === 0 || token === ">")) {
    throw new InvalidArgumentError("name", `agent name ${describeValue(name)} cannot be a NATS subject (civitas.agent.<name>): no empty part between dots and no '>' part; rename the agent`);
  }
}
