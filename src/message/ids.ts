import { randomFillSync } from "node:crypto";

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Takes `n` random bytes from a pool refilled in 4 KiB batches: ids are on the hot path. */
function take(n: number): number {
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return at;
}

function hex(at: number, length: number): string {
  let out = "";
  for (let i = at; i < at + length; i++) out += HEX[pool[i] as number];
  return out;
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of epoch milliseconds, then randomness, so ids
 * sort by creation time.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  const at = take(10);
  // Whole, non-negative milliseconds: a fractional or negative time would put
  // '.' or '-' into the hex timestamp field.
  const wholeMs = Number.isFinite(nowMs) ? Math.max(0, Math.floor(nowMs)) : Date.now();
  const ms = wholeMs.toString(16).padStart(12, "0").slice(-12);
  const versioned = HEX[0x70 | ((pool[at] as number) & 0x0f)] as string;
  const variant = HEX[0x80 | ((pool[at + 2] as number) & 0x3f)] as string;
  return (
    `${ms.slice(0, 8)}-${ms.slice(8, 12)}-${versioned}${hex(at + 1, 1)}-` +
    `${variant}${hex(at + 3, 1)}-${hex(at + 4, 6)}`
  );
}

/** A random 128-bit trace id as 32 lowercase hex characters (W3C trace context). */
export function newTraceId(): string {
  return hex(take(16), 16);
}

/** A random 64-bit span id as 16 lowercase hex characters (W3C trace context). */
export function newSpanId(): string {
  return hex(take(8), 8);
}
