import type { StateStore } from "./state-store.js";

/**
 * Key of a store's optional read-ahead: `store[readAhead](names)` reads the
 * records of all `names` in one go, so that the `get` of each of them during
 * the start of the runtime's tree needs no query of its own (a `get` per
 * agent is a read transaction per agent: 100,000 of them on SQLite took
 * seconds). Returns the function that drops what is still unread.
 *
 * Only an optimisation: `get` returns and throws exactly what it would have
 * (a record is decoded and checked when it is asked for), a record is read
 * ahead at most once, and a `set` or `delete` of a name drops what was read
 * of it. What another connection writes between the read-ahead and that
 * agent's start is not seen by that start, as it would not have been had the
 * start come first. A store that cannot read ahead (or fails to) reads each
 * record on `get`, as without it.
 * @internal
 */
export const readAhead: unique symbol = Symbol("civitas.readAhead");

/** A store that can read records ahead (see {@link readAhead}). @internal */
export interface ReadsAhead {
  [readAhead](names: readonly string[]): () => void;
}

/** Reads the records of the agents `names` lists ahead when `store` can; returns what drops the rest. @internal */
export function readStatesAhead(store: StateStore, names: () => readonly string[]): () => void {
  const read = (store as Partial<ReadsAhead>)[readAhead];
  if (typeof read !== "function") return nothingAhead; // the list of names only for a store that reads ahead
  const listed = names();
  if (listed.length === 0) return nothingAhead;
  return read.call(store, listed);
}

function nothingAhead(): void {}

/** How many records one query reads ahead: the agents start in order, so each query serves the next this many starts. */
const CHUNK = 1024;

/**
 * Records read ahead for a starting tree, a chunk at a time in the order its
 * agents start (the order of `names`): each chunk is read when the first of
 * its agents asks, so what is read dies young instead of waiting in memory
 * for the whole start. A store keeps one while the read-ahead is in use.
 * @internal
 */
export class RowsAhead<Row> {
  private rows = new Map<string, Row | null>();
  private next = 0;

  /**
   * `read` returns the rows of those of `names` that have one (and may
   * throw: nothing is then read ahead for them); `nameOf` tells whose a row is.
   */
  constructor(
    private readonly names: readonly string[],
    private readonly read: (names: readonly string[]) => Iterable<Row>,
    private readonly nameOf: (row: Row) => string,
  ) {}

  /** The row read ahead for `name` (`null`: it has none), taken once; `undefined` when nothing was read for it. */
  take(name: string): Row | null | undefined {
    let row = this.rows.get(name);
    if (row === undefined) {
      if (this.names[this.next] !== name) return undefined;
      this.readChunk();
      row = this.rows.get(name);
      if (row === undefined) return undefined;
    }
    this.rows.delete(name);
    return row;
  }

  /** Forgets what was read of `name`: it is being written. */
  drop(name: string): void {
    this.rows.delete(name);
  }

  private readChunk(): void {
    const names = this.names.slice(this.next, this.next + CHUNK);
    this.next += names.length;
    const rows = new Map<string, Row | null>();
    try {
      for (const name of names) rows.set(name, null);
      for (const row of this.read(names)) rows.set(this.nameOf(row), row);
    } catch {
      rows.clear(); // each get of these names reads, and reports, on its own
    }
    this.rows = rows;
  }
}
