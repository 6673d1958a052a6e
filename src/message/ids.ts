import { randomFillSync } from "node:crypto";

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");
const scratch = Buffer.allocUnsafe(36);

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

/**
 * Writes the bytes as lowercase hex into `scratch` at `pos`. Ids are built as
 * bytes and decoded once, so each is one flat string: concatenating
 * characters would leave a rope of small strings behind every id.
 */
function writeHex(pos: number, at: number, length: number): number {
  for (let i = at; i < at + length; i++) {
    const byte = pool[i] as number;
    scratch[pos++] = HEX_DIGITS[byte >> 4] as number;
    scratch[pos++] = HEX_DIGITS[byte & 0x0f] as number;
  }
  return pos;
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of epoch milliseconds, then randomness, so ids
 * sort by creation time.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  const at = take(10);
  // Whole, non-negative milliseconds: a fractional or negative time would put
  // '.' or '-' into the hex timestamp field.
  let ms = Number.isFinite(nowMs) ? Math.max(0, Math.floor(nowMs)) : Date.now();
  for (let i = 12; i >= 0; i--) {
    if (i === 8) continue;
    scratch[i] = HEX_DIGITS[ms % 16] as number;
    ms = Math.floor(ms / 16);
  }
  scratch[8] = 0x2d;
  scratch[13] = 0x2d;
  pool[at] = 0x70 | ((pool[at] as number) & 0x0f);
  let pos = writeHex(14, at, 2);
  scratch[pos++] = 0x2d;
  pool[at + 2] = 0x80 | ((pool[at + 2] as number) & 0x3f);
  pos = writeHex(pos, at + 2, 2);
  scratch[pos++] = 0x2d;
  writeHex(pos, at + 4, 6);
  return scratch.toString("latin1", 0, 36);
}

/** A random 128-bit trace id as 32 lowercase hex characters (W3C trace context). */
export function newTraceId(): string {
  return scratch.toString("latin1", 0, writeHex(0, take(16), 16));
}

/** A random 64-bit span id as 16 lowercase hex characters (W3C trace context). */
export function newSpanId(): string {
  return scratch.toString("latin1", 0, writeHex(0, take(8), 8));
}
