import { InvalidRequestError } from "./http-errors.js";

/** One page of a list, and the cursor of the next one when there is more. */
export interface Page<T> {
  /** How many items match the filters, over all pages. */
  readonly total: number;
  readonly items: readonly T[];
  /** Pass as `?cursor=` to get the next page; absent on the last one. */
  readonly nextCursor?: string;
}

/** Largest `?limit=`. */
const MAX_LIMIT = 500;

/** `?limit=` (1–500) or `fallback`. @internal */
export function limitParam(query: URLSearchParams, fallback: number): number {
  const raw = query.get("limit");
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > MAX_LIMIT) throw new InvalidRequestError(`?limit= takes a whole number from 1 to ${MAX_LIMIT}, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * The page of `sorted` (sorted by `keyOf`, ascending, keys unique) after
 * `?cursor=`, of at most `limit` items. The cursor is the last key of the
 * previous page, so a page stays right when items before it go away.
 * @internal
 */
export function pageOf<T>(sorted: readonly T[], keyOf: (item: T) => string, query: URLSearchParams, limit: number): Page<T> {
  const cursor = query.get("cursor");
  let start = 0;
  if (cursor !== null) {
    let after: string;
    try {
      after = Buffer.from(cursor, "base64url").toString("utf8");
    } catch {
      throw new InvalidRequestError(`?cursor= is not a cursor this server gave out: ${JSON.stringify(cursor)}`);
    }
    if (after === "" || Buffer.from(after, "utf8").toString("base64url") !== cursor) throw new InvalidRequestError(`?cursor= is not a cursor this server gave out: ${JSON.stringify(cursor)}`);
    start = sorted.findIndex((item) => keyOf(item) > after);
    if (start === -1) start = sorted.length;
  }
  const items = sorted.slice(start, start + limit);
  const last = items.at(-1);
  const more = start + limit < sorted.length && last !== undefined;
  return more ? { total: sorted.length, items, nextCursor: Buffer.from(keyOf(last), "utf8").toString("base64url") } : { total: sorted.length, items };
}
