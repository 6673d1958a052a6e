import type { Clock, TimerHandle } from "./clock.js";

/**
 * Something that times out: a node of the intrusive list it waits in, so
 * adding and removing it allocate nothing.
 * @internal
 */
export interface Expiring<T> {
  /** Epoch ms at which it times out. */
  deadlineMs: number;
  /** The list it waits in; `undefined` once removed or expired. */
  list: TimeoutList<T> | undefined;
  prev: T | undefined;
  next: T | undefined;
}

/** The entries that share one timeout, oldest first: equal timeouts added over time expire in the order they were added. @internal */
export interface TimeoutList<T> {
  readonly timeoutMs: number;
  head: T | undefined;
  tail: T | undefined;
  timer: TimerHandle | undefined;
  /** Whether `timer` keeps the process alive: while entries wait, and until the next turn of the event loop after the last one left. */
  held: boolean;
  /** The last entry left while `held`: the timer lets go of the process at the next turn if none came back. */
  releasing: boolean;
}

/**
 * Timeouts for many waiting operations (asks, control requests) on one timer
 * per distinct timeout length, as Node keeps its own timer lists. Adding and
 * removing an entry is O(1) and arms or cancels no timer: a timer that fires
 * early, because the entry it was armed for settled, just re-arms for the
 * oldest entry left. So an ask costs a few pointer writes instead of a Node
 * timer and a closure.
 *
 * Deadlines come from the clock's `now()` (the caller passes the start time
 * it already read): a wall clock set back delays timeouts by as much, never
 * fires them early.
 *
 * A list's timer keeps the process alive (`ref`) while entries wait in it,
 * so a waiting ask's timeout always fires, and lets go of it (`unref`) at
 * the next turn of the event loop after the last entry left: an answered
 * ask holds no process beyond that turn. {@link TimeoutLists.clear}
 * cancels every timer, so nothing of the owner stays reachable from a timer.
 * @internal
 */
export class TimeoutLists<T extends Expiring<T>> {
  private readonly lists = new Map<number, TimeoutList<T>>();
  /** The list added to last: most callers use one timeout (an ask's default), found without a map lookup. */
  private last: TimeoutList<T> | undefined;
  private releaseScheduled = false;

  constructor(
    private readonly clock: Clock,
    private readonly onTimeout: (entry: T) => void,
  ) {}

  /** Starts `entry`'s timeout of `timeoutMs`, counted from `startMs`. */
  add(entry: T, timeoutMs: number, startMs: number): void {
    let list = this.last;
    if (list === undefined || list.timeoutMs !== timeoutMs) {
      list = this.lists.get(timeoutMs);
      if (list === undefined) {
        list = { timeoutMs, head: undefined, tail: undefined, timer: undefined, held: false, releasing: false };
        this.lists.set(timeoutMs, list);
      }
      this.last = list;
    }
    entry.deadlineMs = startMs + timeoutMs;
    entry.list = list;
    entry.next = undefined;
    entry.prev = list.tail;
    if (list.tail === undefined) list.head = entry;
    else list.tail.next = entry;
    list.tail = entry;
    if (list.timer === undefined) this.arm(list, timeoutMs);
    else if (!list.held) this.hold(list, true);
  }

  /** Stops `entry`'s timeout; a no-op when it is not waiting. */
  remove(entry: T): void {
    const list = entry.list;
    if (list === undefined) return;
    if (entry.prev === undefined) list.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) list.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.list = undefined;
    entry.prev = undefined;
    entry.next = undefined;
    // The timer stays armed for the next entry (re-arming one per ask costs more than the ask), but holds no process.
    if (list.head === undefined && list.held) this.letGoSoon(list);
  }

  /** Cancels every timer and forgets every list; entries still waiting never time out. */
  clear(): void {
    for (const list of this.lists.values()) {
      list.timer?.cancel();
      list.timer = undefined;
      for (let entry = list.head; entry !== undefined; entry = list.head) this.remove(entry);
    }
    this.lists.clear();
    this.last = undefined;
  }

  /** Entries still waiting (for tests and diagnostics). */
  get size(): number {
    let size = 0;
    for (const list of this.lists.values()) for (let e = list.head; e !== undefined; e = e.next) size++;
    return size;
  }

  private arm(list: TimeoutList<T>, delayMs: number): void {
    list.timer = this.clock.setTimeout(() => this.fire(list), Math.max(0, delayMs));
    list.held = false;
    this.hold(list, true);
  }

  /**
   * Lets `list`'s timer go of the process at the next turn of the event
   * loop if the list is still empty then. Asks made one after another empty
   * and refill a list once per ask, and each `ref`/`unref` is a call into
   * Node's C++ timer bookkeeping: deferred, a run of asks pays for one.
   */
  private letGoSoon(list: TimeoutList<T>): void {
    if (list.timer?.unref === undefined) {
      list.held = false; // a clock whose timers hold no process: nothing to defer
      return;
    }
    list.releasing = true;
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    setImmediate(() => {
      this.releaseScheduled = false;
      for (const waiting of this.lists.values()) {
        if (!waiting.releasing) continue;
        waiting.releasing = false;
        if (waiting.head === undefined && waiting.held) this.hold(waiting, false);
      }
    });
  }

  private hold(list: TimeoutList<T>, held: boolean): void {
    list.held = held;
    if (held) list.timer?.ref?.();
    else list.timer?.unref?.();
  }

  private fire(list: TimeoutList<T>): void {
    list.timer = undefined;
    const now = this.clock.now();
    for (let entry = list.head; entry !== undefined && entry.deadlineMs <= now; entry = list.head) {
      this.remove(entry);
      this.onTimeout(entry);
    }
    if (list.timer !== undefined) return; // an onTimeout callback added an entry, which armed the list again
    if (list.head !== undefined) this.arm(list, list.head.deadlineMs - now);
    else {
      this.lists.delete(list.timeoutMs);
      if (this.last === list) this.last = undefined;
    }
  }
}
