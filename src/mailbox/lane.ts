import { InvalidArgumentError } from "../errors/errors.js";
import type { Message } from "../message/message.js";
import { Deque } from "./deque.js";
import type { Putter } from "./mailbox-waiters.js";

/** One lane's queued messages, with its waiting puts created on first need (an idle mailbox stays small). */
export class Lane extends Deque<Message> {
  putters: Deque<Putter> | undefined;
  constructor(readonly capacity: number) {
    super();
  }

  /** How many puts wait for room in this lane. */
  get waitingPuts(): number {
    return this.putters?.length ?? 0;
  }
}

/** A mailbox's priority capacity when its options give none. */
export const DEFAULT_PRIORITY_CAPACITY = 100;

/**
 * The priority lane of every mailbox at the default capacity that nothing
 * has been put into yet: one shared, always empty lane, so an idle agent
 * holds no lane of its own for control it may never get. Reading it (its
 * length, a take) finds nothing; only {@link writableLane} is put into.
 */
const UNUSED_PRIORITY_LANE = new Lane(DEFAULT_PRIORITY_CAPACITY);

/** A new mailbox's priority lane: the shared unused one at the default capacity. */
export function unusedPriorityLane(capacity: number): Lane {
  return capacity === DEFAULT_PRIORITY_CAPACITY ? UNUSED_PRIORITY_LANE : new Lane(capacity);
}

/** `lane`, or a lane of its own in place of the shared unused one: what a put goes into. */
export function writableLane(lane: Lane): Lane {
  return lane === UNUSED_PRIORITY_LANE ? new Lane(lane.capacity) : lane;
}

/** `value` as the capacity option `name` of a mailbox: refused with `INVALID_ARGUMENT` unless a positive integer. */
export function checkCapacity(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidArgumentError(name, `mailbox ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
