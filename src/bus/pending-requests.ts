/**
 * The requests waiting for their reply, by correlation id. The newest sits in
 * a slot of its own, so a caller that asks one thing at a time never touches
 * the map, and no id is hashed on that path.
 * @internal
 */
export class PendingRequests<T extends { readonly correlationId: string }> {
  private newest: T | undefined;
  private readonly older = new Map<string, T>();

  /** How many requests wait. */
  get size(): number {
    return this.older.size + (this.newest === undefined ? 0 : 1);
  }

  /** Starts waiting for the reply to `entry`. */
  add(entry: T): void {
    if (this.newest !== undefined) this.older.set(this.newest.correlationId, this.newest);
    this.newest = entry;
  }

  /** Stops waiting under `correlationId`, returning the request that waited, if any. */
  take(correlationId: string): T | undefined {
    const newest = this.newest;
    if (newest !== undefined && newest.correlationId === correlationId) {
      this.newest = undefined;
      return newest;
    }
    const entry = this.older.get(correlationId);
    if (entry !== undefined) this.older.delete(correlationId);
    return entry;
  }

  /** The correlation ids waiting, oldest first. */
  ids(): string[] {
    const ids = [...this.older.keys()];
    if (this.newest !== undefined) ids.push(this.newest.correlationId);
    return ids;
  }
}
