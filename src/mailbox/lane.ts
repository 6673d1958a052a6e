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
