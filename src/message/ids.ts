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

const HEX3: string[] = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, "0"));

let lastMs = -1;
let counter = 0;
let prefix = "";
let suffix = "";

/**
 * A UUIDv7 (RFC 9562): 48 bits of epoch milliseconds, a 12-bit counter that
 * starts at a random value each millisecond (RFC 9562 §6.2, method 1), then
 * 62 random bits drawn afresh each millisecond and whenever the counter wraps.
 * Ids sort by creation time and are unique within a process without a random
 * draw per id: ids are made for every message, so this is on the hot path.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  // Whole, non-negative milliseconds: a fractional or negative time would put
  // '.' or '-' into the hex timestamp field.
  const ms = Number.isFinite(nowMs) ? Math.max(0, Math.floor(nowMs)) : Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    prefix = millisecondPrefix(ms);
    counter = (pool[take(1)] as number) << 3; // a random start leaves room to count up within the millisecond
    suffix = randomSuffix();
  } else if (++counter > 0xfff) {
    counter = 0;
    suffix = randomSuffix();
  }
  return prefix + (HEX3[counter] as string) + suffix;
}

/** `tttttttt-tttt-7`: the timestamp and version of every id minted in millisecond `ms`. */
function millisecondPrefix(ms: number): string {
  let rest = ms;
  for (let i = 12; i >= 0; i--) {
    if (i === 8) continue;
    scratch[i] = HEX_DIGITS[rest % 16] as number;
    rest = Math.floor(rest / 16);
  }
  scratch[8] = 0x2d;
  scratch[13] = 0x2d;
  scratch[14] = 0x37;
  return scratch.toString("latin1", 0, 15);
}

/** `-vrrr-rrrrrrrrrrrr`: variant bits and 62 random bits. */
function randomSuffix(): string {
  const at = take(8);
  pool[at] = 0x80 | ((pool[at] as number) & 0x3f);
  scratch[0] = 0x2d;
  let pos = writeHex(1, at, 2);
  scratch[pos++] = 0x2d;
  pos = writeHex(pos, at + 2, 6);
  return scratch.toString("latin1", 0, pos);
}

let traceCounter = 0xfff;
let tracePrefix = "";
let spanCounter = 0xfff;
let spanPrefix = "";

/** `length` random hex characters, as one flat string. */
function randomHex(length: number): string {
  return scratch.toString("latin1", 0, writeHex(0, take(Math.ceil(length / 2)), Math.ceil(length / 2))).slice(0, length);
}

/**
 * A W3C trace id (32 lowercase hex characters) for a message that starts a
 * trace of its own: 116 random bits drawn once per block of 4,095 ids, then a
 * counter. Unique within the process like a fully random id, and never all
 * zeros (the counter starts at 1), without a random draw per message.
 */
export function newTraceId(): string {
  if (++traceCounter > 0xfff) {
    traceCounter = 1;
    tracePrefix = randomHex(29);
  }
  return tracePrefix + (HEX3[traceCounter] as string);
}

/** A W3C span id (16 lowercase hex characters): 52 random bits per block of 4,095 ids, then a counter (never all zeros). */
export function newSpanId(): string {
  if (++spanCounter > 0xfff) {
    spanCounter = 1;
    spanPrefix = randomHex(13);
  }
  return spanPrefix + (HEX3[spanCounter] as string);
}
