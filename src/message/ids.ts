import { randomFillSync } from "node:crypto";

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");
const scratch = Buffer.allocUnsafe(36);

/** Where random bytes and the default time come from (a simulation makes both deterministic). */
let fill: (buffer: Buffer) => unknown = randomFillSync;
let nowDefault: () => number = Date.now;

/** Takes `n` random bytes from a pool refilled in 4 KiB batches: ids are on the hot path. */
function take(n: number): number {
  if (offset + n > POOL_SIZE) {
    fill(pool);
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

/**
 * How far behind the last id's time a new time may be and still continue its
 * sequence (a clock stepped back by NTP, a leap second, a counter that ran
 * ahead). A time further behind is taken as given: the caller chose it (a
 * message created with an explicit historic `timestamp`, a test clock), and
 * one such id must not pin every later id to a time far from the clock's.
 */
const CLOCK_STEP_MS = 10_000;

/** Every id before 2^48 ms (the year 10889) fits the 48-bit time field. */
const MAX_MS = 2 ** 48 - 1;

/**
 * The time in the current prefix: the last one used, possibly ahead of the
 * clock after a counter overflow. NaN before the first id: it equals no
 * time, so no id continues a sequence that was never started.
 */
let lastMs = Number.NaN;
let counter = 0;
let prefix = "";
let suffix = "";
/** Bumped whenever {@link prefix} or {@link suffix} changes, so {@link copyMinted} knows when {@link idBytes} is stale. */
let idGeneration = 0;

/**
 * Whether the ids, trace ids and span ids minted are remembered for
 * {@link copyMinted}: turned on by an encoder that copies them (the NATS
 * envelope writer, when it is loaded), so that a runtime without one does
 * not pay a store per id. The stores are a write barrier's worth each: a
 * young string kept by an old module.
 */
let remembering = false;
/** The id {@link uuidv7} returned last, while {@link remembering}. */
let lastId = "";
/** The bytes of {@link lastId} except its counter's three (15-17), as of {@link idBytesGeneration}. */
const idBytes = new Uint8Array(36);
let idBytesGeneration = -1;

/**
 * A UUIDv7 (RFC 9562): 48 bits of epoch milliseconds, a 12-bit counter that
 * starts at a random value each millisecond, then 62 random bits drawn afresh
 * each millisecond (RFC 9562 §6.2, method 1). Ids are unique and strictly
 * increasing within a process without a random draw per id (ids are made for
 * every message, so this is on the hot path):
 *
 * - when the counter overflows within a millisecond, the id's time moves on
 *   to the next millisecond (ahead of the clock for at most as long as ids
 *   are minted faster than 4,096 per millisecond);
 * - a time behind the last one used by at most 10 seconds
 *   (the clock stepped back) continues the last one's sequence, so the id's
 *   time never goes below the last one used.
 *
 * A time further behind than that is encoded as given and starts a new
 * sequence; so is any later time.
 *
 * @param nowMs - epoch milliseconds to encode; fractions are dropped, a
 *   negative time counts as 0 and a non-finite one as `Date.now()`.
 * @defaultValue nowMs `Date.now()`
 * @example
 * ```ts
 * const a = uuidv7();
 * const b = uuidv7();
 * a < b; // true
 * ```
 */
export function uuidv7(nowMs: number = nowDefault()): string {
  // The common case, kept small so that V8 inlines it where messages are composed: another id in the same millisecond.
  if (nowMs === lastMs && counter < 0xfff) return minted(prefix + (HEX3[++counter] as string) + suffix);
  return nextMillisecondId(nowMs);
}

/** {@link uuidv7} for a time other than the last one's, or once the counter is spent. */
function nextMillisecondId(nowMs: number): string {
  // Whole, non-negative milliseconds: a fractional or negative time would put
  // '.' or '-' into the hex timestamp field.
  const ms = Number.isFinite(nowMs) ? Math.max(0, Math.floor(nowMs)) : nowDefault();
  if (ms === lastMs || (ms < lastMs && lastMs - ms <= CLOCK_STEP_MS)) {
    if (++counter <= 0xfff) return minted(prefix + (HEX3[counter] as string) + suffix);
    // Counter overflow: move on to the next millisecond (RFC 9562 §6.2, method 1).
    // At the very end of the 48-bit range there is none: draw a new random suffix instead.
    if (lastMs < MAX_MS) startMillisecond(lastMs + 1);
    else {
      counter = 0;
      suffix = randomSuffix();
      idGeneration++;
    }
  } else {
    startMillisecond(ms);
  }
  return minted(prefix + (HEX3[counter] as string) + suffix);
}

function minted(id: string): string {
  if (remembering) lastId = id;
  return id;
}

/** Starts the sequence of ids of millisecond `ms`: its prefix, a random counter start and a random suffix. */
function startMillisecond(ms: number): void {
  lastMs = ms;
  prefix = millisecondPrefix(ms);
  counter = (pool[take(1)] as number) << 3; // a random start leaves room to count up within the millisecond
  suffix = randomSuffix();
  idGeneration++;
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
let lastTraceId = "";
/** The bytes of {@link lastTraceId} but its counter's, from {@link traceBytesPrefix}. */
const traceBytes = new Uint8Array(32);
let traceBytesPrefix = "";
let spanCounter = 0xfff;
let spanPrefix = "";
let lastSpanId = "";
/** The bytes of {@link lastSpanId} but its counter's, from {@link spanBytesPrefix}. */
const spanBytes = new Uint8Array(16);
let spanBytesPrefix = "";

/** `length` random hex characters, as one flat string. */
function randomHex(length: number): string {
  writeHex(0, take(Math.ceil(length / 2)), Math.ceil(length / 2));
  return scratch.toString("latin1", 0, length);
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
  const id = tracePrefix + (HEX3[traceCounter] as string);
  if (remembering) lastTraceId = id;
  return id;
}

/** A W3C span id (16 lowercase hex characters): 52 random bits per block of 4,095 ids, then a counter (never all zeros). */
export function newSpanId(): string {
  if (++spanCounter > 0xfff) {
    spanCounter = 1;
    spanPrefix = randomHex(13);
  }
  const id = spanPrefix + (HEX3[spanCounter] as string);
  if (remembering) lastSpanId = id;
  return id;
}

/**
 * Copies `value` as ASCII into `into` at `at` when it is the id, trace id or
 * span id minted last (the very string this module returned), from the
 * bytes it was made of, and says whether it did (writing nothing when not).
 * An encoder writes a message it was handed right after it was composed
 * this way: the ids are ropes (a prefix, a counter, a suffix), which reading
 * character by character, or writing through Node's native string writer,
 * first flattens into a copy.
 * @internal
 */
export function copyMinted(value: string, into: Uint8Array, at: number): boolean {
  if (value === lastId) {
    if (idBytesGeneration !== idGeneration) {
      writeText(idBytes, 0, prefix);
      writeText(idBytes, 18, suffix);
      idBytesGeneration = idGeneration;
    }
    return copyCounted(idBytes, 15, counter, into, at);
  }
  if (value === lastTraceId) {
    // Flat strings made once per 4,095 ids: the same one is the same object, and `!==` a pointer comparison.
    if (traceBytesPrefix !== tracePrefix) traceBytesPrefix = writeText(traceBytes, 0, tracePrefix);
    return copyCounted(traceBytes, 29, traceCounter, into, at);
  }
  if (value === lastSpanId) {
    if (spanBytesPrefix !== spanPrefix) spanBytesPrefix = writeText(spanBytes, 0, spanPrefix);
    return copyCounted(spanBytes, 13, spanCounter, into, at);
  }
  return false;
}

/**
 * Turns on remembering the ids minted, for {@link copyMinted}: called once by
 * an encoder that copies them.
 * @internal
 */
export function rememberMinted(): void {
  remembering = true;
}

/** Writes the latin1 `text` (a flat string this module made) into `bytes` at `at`, and returns it. */
function writeText(bytes: Uint8Array, at: number, text: string): string {
  for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i);
  return text;
}

/** Copies `bytes` into `into` at `at`, with the three hex digits of `count` at `countAt` (one `set`: a byte loop costs more for 16 bytes and up). */
function copyCounted(bytes: Uint8Array, countAt: number, count: number, into: Uint8Array, at: number): true {
  into.set(bytes, at);
  into[at + countAt] = HEX_DIGITS[count >> 8] as number;
  into[at + countAt + 1] = HEX_DIGITS[(count >> 4) & 0x0f] as number;
  into[at + countAt + 2] = HEX_DIGITS[count & 0x0f] as number;
  return true;
}

/**
 * Makes ids deterministic (a simulation): random bytes come from `source.fill`
 * and the default time from `source.now`; without `source`, from the crypto
 * generator and `Date.now()` again. Either way every sequence starts afresh,
 * so the same source gives the same ids.
 * @internal
 */
export function useIdSource(source?: { fill(buffer: Buffer): void; now(): number }): void {
  fill = source === undefined ? randomFillSync : (buffer) => source.fill(buffer);
  nowDefault = source === undefined ? Date.now : () => source.now();
  offset = POOL_SIZE;
  lastMs = Number.NaN;
  counter = 0;
  prefix = "";
  suffix = "";
  lastId = "";
  idGeneration++;
  traceCounter = 0xfff;
  lastTraceId = "";
  spanCounter = 0xfff;
  lastSpanId = "";
}
