/**
 * A growable ring buffer: O(1) push at the back, shift from (and unshift to) the front,
 * no `Array.shift`. Storage is allocated on first push, so an idle, empty
 * deque costs one small object.
 */
const EMPTY: readonly unknown[] = [];

export class Deque<T> {
  private buffer: (T | undefined)[] = EMPTY as (T | undefined)[];
  private head = 0;
  private count = 0;

  /** Number of items held. */
  get length(): number {
    return this.count;
  }

  /** Appends `item` at the back. */
  push(item: T): void {
    if (this.count === this.buffer.length) this.grow();
    this.buffer[(this.head + this.count) & (this.buffer.length - 1)] = item;
    this.count++;
  }

  /** Puts `item` at the front, before every other item. */
  unshift(item: T): void {
    if (this.count === this.buffer.length) this.grow();
    this.head = (this.head - 1) & (this.buffer.length - 1);
    this.buffer[this.head] = item;
    this.count++;
  }

  /** Removes and returns the front item, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.buffer[this.head];
    this.buffer[this.head] = undefined;
    this.head = (this.head + 1) & (this.buffer.length - 1);
    this.count--;
    return item;
  }

  /** The front item without removing it. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.buffer[this.head];
  }

  /**
   * Removes the first occurrence of `item`, closing the gap; returns whether
   * it was there. O(n): for rare removals from the middle (an aborted wait).
   */
  remove(item: T): boolean {
    const mask = this.buffer.length - 1;
    let i = 0;
    while (i < this.count && this.buffer[(this.head + i) & mask] !== item) i++;
    if (i === this.count) return false;
    for (; i < this.count - 1; i++) this.buffer[(this.head + i) & mask] = this.buffer[(this.head + i + 1) & mask];
    this.buffer[(this.head + this.count - 1) & mask] = undefined;
    this.count--;
    return true;
  }

  /** Every item, front to back, without removing any. */
  toArray(): T[] {
    const items: T[] = [];
    for (let i = 0; i < this.count; i++) items.push(this.buffer[(this.head + i) & (this.buffer.length - 1)] as T);
    return items;
  }

  /** Removes every item and returns them front to back. */
  drain(): T[] {
    const items: T[] = [];
    while (this.count > 0) items.push(this.shift() as T);
    return items;
  }

  private grow(): void {
    const size = this.buffer.length === 0 ? 4 : this.buffer.length * 2;
    const next = new Array<T | undefined>(size);
    for (let i = 0; i < this.count; i++) next[i] = this.buffer[(this.head + i) & (this.buffer.length - 1)];
    this.buffer = next;
    this.head = 0;
  }
}

